// Shared DOM helpers of the page: finding and building elements, values as text, and the messages it shows
// (error banners, screen-reader announcements, the connection state).

export const $ = (selector, root = document) => root.querySelector(selector);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('data-') || key.startsWith('aria-') || key === 'role') node.setAttribute(key, value);
    else if (value === true) node.setAttribute(key, '');
    else node[key] = value;
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

/** A row value that is an item with fields: an object with a string `title` (and maybe `done`, `note`). */
export function isItem(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && typeof value.title === 'string';
}

export function valueText(value) {
  if (typeof value === 'string') return value;
  if (isItem(value)) return value.title;
  return JSON.stringify(value);
}

export function parseValue(text, old) {
  if (typeof old === 'string' || old === undefined) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function showError(error) {
  if (!error) return;
  const text = error.message || String(error);
  const banners = $('#banners');
  // The same message twice (a refused subscription is both a rejected promise and an error event) shows once.
  if ([...banners.querySelectorAll('.banner-text')].some((shown) => shown.textContent === text)) return;
  const banner = el('div', { class: 'banner', role: 'alert' },
    el('span', { class: 'banner-text', text }),
    error.code ? el('code', { class: 'banner-code', text: error.code }) : null,
    el('button', { type: 'button', class: 'banner-close', 'aria-label': 'Dismiss', text: '×' }));
  banner.querySelector('.banner-close').addEventListener('click', () => banner.remove());
  banners.append(banner);
  while (banners.children.length > 3) banners.firstElementChild.remove();
}

/** Tells screen readers what a keyboard action did (a polite live region). */
export function announce(text) {
  $('#announce').textContent = text;
}

export function showState({ state, delay }) {
  const conn = $('#conn');
  conn.dataset.state = state;
  conn.textContent = {
    idle: 'Offline', connecting: 'Connecting…', live: 'Live', closed: 'Closed',
    reconnecting: `Reconnecting${delay ? ` in ${Math.max(1, Math.round(delay / 1000))} s` : '…'}`,
  }[state] ?? state;
  // A token refusal is answered once a token brings the connection to Live.
  if (state === 'live') {
    for (const code of $('#banners').querySelectorAll('.banner-code')) {
      if (code.textContent === 'unauthorized') code.closest('.banner').remove();
    }
  }
}
