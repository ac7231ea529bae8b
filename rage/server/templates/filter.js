document.querySelectorAll('input.filter').forEach(function (box) {
  var target = document.getElementById(box.dataset.target);
  var count = document.getElementById(box.dataset.target + '-count');
  var items = target.querySelectorAll('.line, tbody tr');
  box.hidden = false;
  box.addEventListener('input', function () {
    var q = box.value.toLowerCase(), shown = 0;
    items.forEach(function (el) {
      var hit = !q || el.textContent.toLowerCase().indexOf(q) !== -1;
      el.hidden = !hit;
      if (hit) { shown++; }
    });
    if (count) { count.textContent = q ? shown + ' of ' + items.length + ' lines' : ''; }
  });
});
