"""An independent redaction corpus: generated example secrets of every catalogued kind, the
contexts real tools print them in, and a benign corpus of real tool output that must survive.

Secrets are made at test time by a seeded generator (valid shape, random content): none is
real. The shapes follow the providers' documentation, written down here independently of
the regexes in rage/redact/formats.py.
"""
