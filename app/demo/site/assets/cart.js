// Harbor & Pine sample site: a pretend cart. "Add to cart" buttons (data-action="add-to-cart")
// bump the count in the header and say what was added, so an assistant action that clicks one
// has a visible, testable effect. Nothing is sent anywhere.
(function () {
  var KEY = "harborpine:cart";
  function read() {
    try { return JSON.parse(sessionStorage.getItem(KEY)) || []; } catch (e) { return []; }
  }
  function show(items) {
    var count = document.getElementById("cart-count");
    if (count) count.textContent = String(items.length);
  }
  document.addEventListener("DOMContentLoaded", function () { show(read()); });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest('[data-action="add-to-cart"]');
    if (!button) return;
    var items = read();
    items.push(button.getAttribute("data-product"));
    try { sessionStorage.setItem(KEY, JSON.stringify(items)); } catch (e) { /* private mode */ }
    show(items);
    var status = document.getElementById("cart-status");
    var name = document.querySelector("h1");
    if (status) status.textContent = "Added " + (name ? name.textContent : "the item") + " to your cart.";
  });
})();
