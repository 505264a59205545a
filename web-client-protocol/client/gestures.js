// Pointer gestures on the list: swipe a row to uncover its Delete button, drag a row by its handle to reorder it
// (only into sections the table's `moves` rule allows), pull down to refresh, and a long press for the row menu.
import { $ } from './dom.js';
import { moveRow, refresh, reveal } from './actions.js';
import { openMenu } from './menu.js';
import { render } from './render.js';
import { mayMoveInto } from './rules.js';
import { SWIPE_WIDTH, client, rowInfo, rules, ui } from './state.js';

const PULL_THRESHOLD = 64; // px of pull that triggers a refresh
const LONG_PRESS_MS = 500; // a touch held this long without moving opens the row menu

const scroller = $('#scroller');
const sections = $('#sections');
let gesture = null; // the press being followed: pending until it becomes a swipe or a pull (a drag is ui.drag)
let touchPull = null; // a touch at the top of the list, which pulls once it pans down

/** Listens for presses, moves and releases of pointers, and for touches, on the scroller. */
export function installGestures() {
  // A press on the list holds back the drawing of what arrives (`renderArrival`) until its click is dispatched:
  // the click comes in the same task as the release, so the drawing waits for the next task. The release is
  // heard anywhere (the pointer may leave the list), and a window that loses focus ends the press too.
  scroller.addEventListener('pointerdown', () => { ui.pressing = true; }, { capture: true });
  for (const type of ['pointerup', 'pointercancel']) document.addEventListener(type, () => setTimeout(endPress), { capture: true });
  window.addEventListener('blur', endPress);
  scroller.addEventListener('pointerdown', (event) => {
    ui.gestureEnded = null; // a new press: whatever click follows is its own
    if (event.button !== 0 || gesture) return;
    const handle = event.target.closest('.handle');
    if (handle) {
      startDrag(event, handle);
      return;
    }
    if (event.target.closest('input, button')) return;
    const row = event.target.closest('.row[data-id]:not(.placeholder):not(.undeletable)');
    const g = {
      kind: 'pending', pointerId: event.pointerId, type: event.pointerType, x: event.clientX, y: event.clientY,
      row, start: row && ui.revealed === row.dataset.id ? -SWIPE_WIDTH : 0, target: event.target,
    };
    gesture = g;
    // A finger held still on a row opens the row menu (long press), where no contextmenu event comes.
    const pressed = event.target.closest('.row[data-id]');
    if (event.pointerType === 'touch' && pressed) {
      setTimeout(() => {
        if (gesture !== g || g.kind !== 'pending') return;
        gesture = null;
        ui.gestureEnded = { at: performance.now() };
        openMenu(pressed.dataset.id, g.x, g.y);
      }, LONG_PRESS_MS);
    }
  });

  scroller.addEventListener('pointermove', (event) => {
    if (ui.drag) {
      moveDrag(event);
      return;
    }
    if (!gesture || event.pointerId !== gesture.pointerId) return;
    const dx = event.clientX - gesture.x;
    const dy = event.clientY - gesture.y;
    if (gesture.kind === 'pending') {
      if (gesture.row && Math.abs(dx) > 8 && Math.abs(dx) > Math.abs(dy) && !ui.editing) {
        gesture.kind = 'swipe';
        if (ui.revealed && ui.revealed !== gesture.row.dataset.id) reveal(null);
        gesture.row = $(`.row[data-id="${CSS.escape(gesture.row.dataset.id)}"]`);
        gesture.content = $('.row-content', gesture.row);
        gesture.row.classList.add('swiping');
        scroller.setPointerCapture(event.pointerId);
      } else if (gesture.type !== 'touch' && dy > 8 && dy > Math.abs(dx) && scroller.scrollTop <= 0) {
        gesture.kind = 'pull';
        scroller.setPointerCapture(event.pointerId);
      } else if (Math.abs(dx) > 8 || Math.abs(dy) > 8) {
        // A drag that is neither a swipe nor a pull (a row that cannot be deleted) is not a tap either.
        if (gesture.type !== 'touch') ui.gestureEnded = { at: performance.now() };
        gesture = null;
        return;
      }
    }
    if (gesture.kind === 'swipe') {
      const offset = Math.max(-SWIPE_WIDTH * 1.6, Math.min(0, gesture.start + dx));
      gesture.offset = offset;
      gesture.content.style.transform = `translateX(${offset}px)`;
    } else if (gesture.kind === 'pull') {
      showPull(dy);
    }
  });
  scroller.addEventListener('pointerup', (event) => endGesture(event, false));
  scroller.addEventListener('pointercancel', (event) => endGesture(event, true));

  // Touch pulls: the scroller pans vertically natively (touch-action: pan-y), so pointer events stop at the
  // pan's start; touch events go on, and at the top of the list a downward pan becomes a pull instead.
  scroller.addEventListener('touchstart', (event) => {
    if (event.touches.length === 1 && scroller.scrollTop <= 0 && !ui.drag) touchPull = { y: event.touches[0].clientY, pulling: false };
  }, { passive: true });
  scroller.addEventListener('touchmove', (event) => {
    if (!touchPull || ui.drag || gesture?.kind === 'swipe') return;
    const dy = event.touches[0].clientY - touchPull.y;
    if (dy > 8 && scroller.scrollTop <= 0) {
      touchPull.pulling = true;
      touchPull.dy = dy;
      if (event.cancelable) event.preventDefault();
      showPull(dy);
    }
  }, { passive: false });
  scroller.addEventListener('touchend', () => {
    if (touchPull?.pulling) releasePull(touchPull.dy);
    touchPull = null;
  });
}

function endPress() {
  if (!ui.pressing) return;
  ui.pressing = false;
  if (ui.deferred && !ui.drag) {
    ui.deferred = false;
    render();
  }
}

function endGesture(event, cancelled) {
  if (ui.drag) {
    endDrag(event, cancelled);
    return;
  }
  if (!gesture || event.pointerId !== gesture.pointerId) return;
  const g = gesture;
  gesture = null;
  if (g.kind === 'swipe') {
    const id = g.row.dataset.id;
    if (g.type !== 'touch') ui.gestureEnded = { at: performance.now() }; // a finger sends no click
    g.row.classList.remove('swiping');
    const open = !cancelled && g.offset < -SWIPE_WIDTH / 2;
    g.content.style.transform = '';
    if (open) reveal(id);
    else if (ui.revealed === id) reveal(null);
    else render();
  } else if (g.kind === 'pull') {
    ui.gestureEnded = { at: performance.now() };
    releasePull(!cancelled && event.clientY - g.y);
  }
}

function showPull(dy) {
  const pull = $('#pull');
  if (ui.refreshing) return;
  const height = Math.min(96, dy * 0.6);
  pull.style.height = `${height}px`;
  pull.classList.toggle('armed', dy * 0.6 >= PULL_THRESHOLD * 0.6 && dy >= PULL_THRESHOLD);
  $('.pull-text', pull).textContent = dy >= PULL_THRESHOLD ? 'Release to refresh' : 'Pull to refresh';
}

function releasePull(dy) {
  const pull = $('#pull');
  pull.classList.remove('armed');
  pull.style.height = '';
  if (dy >= PULL_THRESHOLD) refresh();
}

// Drag to reorder, by the handle. The row follows the pointer; a line shows where it will go; on release a
// move intent is sent and the row is drawn where the server's update put it.
function startDrag(event, handle) {
  const row = handle.closest('.row');
  const info = rowInfo(row.dataset.id);
  if (!info) return;
  event.preventDefault();
  scroller.setPointerCapture(event.pointerId);
  const rect = row.getBoundingClientRect();
  ui.drag = { id: row.dataset.id, from: [Number(row.dataset.s), Number(row.dataset.r)], pointerId: event.pointerId, y: event.clientY, row, height: rect.height, gap: null };
  row.classList.add('dragging');
  sections.classList.add('drag-active');
  client.beginEditingRow(ui.table, row.dataset.id);
}

function dropGap(y) {
  const drag = ui.drag;
  const lists = [...sections.querySelectorAll('ul.rows')];
  let best = null;
  for (const list of lists) {
    const s = Number(list.dataset.s);
    if (!mayMoveInto(rules(), drag.from[0], s)) continue;
    const rect = list.getBoundingClientRect();
    const distance = y < rect.top ? rect.top - y : y > rect.bottom ? y - rect.bottom : 0;
    if (!best || distance < best.distance) best = { list, s, distance };
  }
  if (!best) return null;
  const rows = [...best.list.querySelectorAll('.row[data-id]')].filter((r) => r.dataset.id !== drag.id);
  const movable = rows.filter((r) => !r.classList.contains('placeholder'));
  for (const r of movable) {
    const rect = r.getBoundingClientRect();
    if (y < rect.top + rect.height / 2) return { s: best.s, r: Number(r.dataset.r), before: r, list: best.list };
  }
  // After the last movable row: before the section's last row if it is a placeholder, else the end of the section.
  const placeholder = rows[rows.length - 1]?.classList.contains('placeholder') ? rows[rows.length - 1] : null;
  if (placeholder) return { s: best.s, r: Number(placeholder.dataset.r), before: placeholder, list: best.list };
  return { s: best.s, r: best.list.querySelectorAll('.row[data-id]').length, before: null, list: best.list };
}

function moveDrag(event) {
  const drag = ui.drag;
  if (event.pointerId !== drag.pointerId) return;
  drag.row.style.transform = `translateY(${event.clientY - drag.y}px)`;
  for (const marked of sections.querySelectorAll('.drop-before, .drop-end')) marked.classList.remove('drop-before', 'drop-end');
  drag.gap = dropGap(event.clientY);
  if (drag.gap?.before) drag.gap.before.classList.add('drop-before');
  else if (drag.gap) drag.gap.list.classList.add('drop-end');
  // Scroll when dragging near the edges of the scroller.
  const box = scroller.getBoundingClientRect();
  if (event.clientY < box.top + 24) scroller.scrollTop -= 12;
  else if (event.clientY > box.bottom - 24) scroller.scrollTop += 12;
}

function endDrag(event, cancelled) {
  const drag = ui.drag;
  if (event.pointerId !== drag.pointerId) return;
  ui.drag = null;
  drag.row.classList.remove('dragging');
  sections.classList.remove('drag-active');
  drag.row.style.transform = '';
  for (const marked of sections.querySelectorAll('.drop-before, .drop-end')) marked.classList.remove('drop-before', 'drop-end');
  client.endEditingRow(ui.table, drag.id);
  const gap = cancelled ? null : drag.gap;
  if (gap) {
    // The drop is "right after the row above the gap" in the view the drag started on (it was not redrawn
    // meanwhile); placed in the table as predicted now, by id, so that others' changes during the drag are
    // respected (after the nearest row above that is still there).
    const section = ui.replica.section(gap.s);
    const above = section.rows.slice(0, gap.r).map((r) => r.id).filter((id) => id !== drag.id).reverse();
    const now = client.predicted(ui.table);
    const s = now.sections.findIndex((candidate) => candidate.id === section.id);
    const from = s < 0 ? null : now.sections.flatMap((sec, i) => sec.rows.map((r, j) => (r.id === drag.id ? [i, j] : null))).find(Boolean);
    if (s >= 0 && from) {
      const rows = now.sections[s].rows.map((r) => r.id).filter((id) => id !== drag.id);
      const after = above.map((id) => rows.indexOf(id)).find((index) => index >= 0);
      moveRow(drag.id, [s, after === undefined ? 0 : after + 1], from);
    }
  }
  ui.deferred = false;
  render();
}
