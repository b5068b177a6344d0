// Small behaviours that need no framework.

// htmx swaps only 2xx responses by default. Our forms answer a validation error with 422 and the
// form re-rendered with its errors (the status tells scripts and tests the truth), so 422 is
// swapped like a success; other 4xx/5xx stay errors and are not swapped.
if (window.htmx) {
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "422", swap: true, error: false },
    { code: "[45]..", swap: false, error: true },
    { code: "...", swap: false },
  ];
  // Back and forward load the page from the server instead of restoring htmx's snapshot: the
  // snapshot is taken just before the next request, when the form already shows the next
  // filters (and the list may be minutes old), so a restored page's form would disagree with
  // its address and the next change would build on filters the list does not show.
  htmx.config.historyCacheSize = 0;
  htmx.config.refreshOnHistoryMiss = true;
  // The Content-Security-Policy (docs/security.md) allows no eval, no inline <style> or
  // <script> and no style attribute: htmx evaluates nothing (no hx-on, no trigger filters, no
  // js: values: their behaviours live below), its indicator styles are in portal.css, a
  // swapped fragment's scripts are dropped, and settling leaves style attributes alone. htmx
  // reads includeIndicatorStyles when it starts (DOMContentLoaded, after this deferred script).
  htmx.config.allowEval = false;
  htmx.config.allowScriptTags = false;
  htmx.config.includeIndicatorStyles = false;
  htmx.config.attributesToSettle = ["class", "width", "height"];
}

// Live fragments (data-live, polled by hx-trigger="every 10s") skip a poll while the tab is
// hidden, and while the element that data-live-pause names is on the page (a form being
// filled in that the swap would replace).
document.addEventListener("htmx:confirm", (event) => {
  const live = event.target;
  if (!(live instanceof Element) || !live.matches("[data-live]")) return;
  const pause = live.dataset.livePause;
  if (document.visibilityState !== "visible" || (pause && document.querySelector(pause))) {
    event.preventDefault();
  }
});

// A live fragment with data-keep-open keeps open the <details> its reader opened (by id)
// across its swaps.
document.addEventListener("htmx:beforeSwap", (event) => {
  const keeper = event.target instanceof Element && event.target.closest("[data-keep-open]");
  if (!keeper) return;
  keeper.dataset.open = Array.from(keeper.querySelectorAll("details[open]"), (d) => d.id).join(" ");
});
document.addEventListener("htmx:afterSwap", (event) => {
  const keeper = event.target instanceof Element && event.target.closest("[data-keep-open]");
  if (!keeper) return;
  for (const id of (keeper.dataset.open || "").split(" ")) {
    const details = id && document.getElementById(id);
    if (details) details.open = true;
  }
});

// Copy-to-clipboard buttons.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.querySelector(button.dataset.copy);
  if (!field) return;
  field.select();
  navigator.clipboard?.writeText(field.value).then(() => {
    button.innerHTML = '<i class="bi bi-check2"></i> Copied';
  });
});
