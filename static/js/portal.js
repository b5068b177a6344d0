// Small behaviours that need no framework: copy-to-clipboard buttons.
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
