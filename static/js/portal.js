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
}

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
