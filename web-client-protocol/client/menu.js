// The row menu: Copy and Paste of a row's value.
import { $, announce, valueText } from './dom.js';
import { act, finishInline, flash, optimistic, reveal } from './actions.js';
import { isPlaceholder } from './rules.js';
import { rowInfo, rules, ui } from './state.js';

/** Opens the row menu (right click, long press, the context-menu key or Shift+F10) at a point on the screen. */
export function openMenu(id, x, y) {
  const info = rowInfo(id);
  if (!info) return;
  finishInline(true);
  if (ui.revealed) reveal(null);
  ui.menu = id;
  const menu = $('#row-menu');
  $('[data-menu="paste"]', menu).disabled = !ui.clipboard;
  $('[data-menu="paste"]', menu).textContent = ui.clipboard ? `Paste “${valueText(ui.clipboard.value).slice(0, 24)}”` : 'Paste';
  menu.hidden = false;
  const box = menu.getBoundingClientRect();
  menu.style.left = `${Math.max(4, Math.min(x, innerWidth - box.width - 4))}px`;
  menu.style.top = `${Math.max(4, Math.min(y, innerHeight - box.height - 4))}px`;
  $('[data-menu="copy"]', menu).focus();
}

export function closeMenu(restoreFocus = false) {
  const id = ui.menu;
  ui.menu = null;
  $('#row-menu').hidden = true;
  if (restoreFocus && id) $(`[data-focus="row:${CSS.escape(id)}"]`)?.focus();
}

/** Copies the row's value (only the value: the row's flags are an admin's to set). */
function copyRow(id) {
  const info = rowInfo(id);
  if (!info) return;
  ui.clipboard = { value: info.row.value };
  navigator.clipboard?.writeText(valueText(info.row.value)).catch(() => {}); // for other apps too, when allowed
  announce(`Copied “${valueText(info.row.value)}”.`);
}

/** Pastes the copied value as a new row after this one (before it when it is an add-item placeholder). */
function pasteAfter(id) {
  const info = rowInfo(id);
  if (!info || !ui.clipboard) return;
  const [s, r] = info.path;
  const at = [s, isPlaceholder(rules(), info.section, r) ? r : r + 1];
  act(optimistic('insert', { at, value: ui.clipboard.value }).then((ack) => {
    if (!ack) return;
    flash(ack.created?.[0]);
    announce(`Pasted “${valueText(ui.clipboard.value)}”.`);
  }));
}

/** Handles the menu's items and keys; a press anywhere else closes it. */
export function installMenu() {
  $('#row-menu').addEventListener('click', (event) => {
    const item = event.target.closest('[data-menu]');
    if (!item || item.disabled) return;
    const id = ui.menu;
    closeMenu(true);
    if (item.dataset.menu === 'copy') copyRow(id);
    else pasteAfter(id);
  });
  $('#row-menu').addEventListener('keydown', (event) => {
    const items = [...$('#row-menu').querySelectorAll('[data-menu]:not(:disabled)')];
    const i = items.indexOf(document.activeElement);
    if (event.key === 'Escape' || event.key === 'Tab') {
      event.preventDefault();
      closeMenu(true);
    } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      items[(i + (event.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length]?.focus();
    }
  });
  document.addEventListener('pointerdown', (event) => {
    if (ui.menu && !event.target.closest('#row-menu')) closeMenu();
  }, true);
}
