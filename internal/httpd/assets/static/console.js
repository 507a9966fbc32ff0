// Runnel console: the only script is the auto-refresh switch. The choice is kept in
// localStorage, so it follows the reader from page to page.
(function () {
  var box = document.getElementById("autorefresh");
  if (!box) return;
  var key = "runnel.console.autorefresh";
  var timer = null;
  function arm() {
    clearTimeout(timer);
    if (box.checked) timer = setTimeout(function () { location.reload(); }, 5000);
  }
  try { box.checked = localStorage.getItem(key) === "1"; } catch (e) {}
  box.addEventListener("change", function () {
    try { localStorage.setItem(key, box.checked ? "1" : "0"); } catch (e) {}
    arm();
  });
  arm();
})();
