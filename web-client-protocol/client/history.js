// The page's History panel: who changed the open table, what and when, and the table as it was at a chosen
// version (read-only), which can be restored as a new table. Built on tablecast.js's `history` and `tableAt`.
const PAGE = 50; // changes per page of the list

const quote = (value) => (typeof value === 'string' ? `“${value}”` : JSON.stringify(value));

/** `14:02` today, `20 Nov 14:02` before. */
export function when(time, now = new Date()) {
  const date = new Date(time);
  const hm = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hour12: false });
  if (date.toDateString() === now.toDateString()) return hm;
  return `${date.toLocaleDateString([], { day: 'numeric', month: 'short' })} ${hm}`;
}

/**
 * What one change did, in words, naming rows by their values. `before` is the table before the change (a Replica),
 * or null when unknown: then deleted and moved rows are named by position only.
 */
export function describe(entry, before) {
  const valueAt = ([s, r]) => {
    try {
      return before ? ` ${quote(before.row([s, r]).value)}` : ` [${s},${r}]`;
    } catch {
      return ` [${s},${r}]`;
    }
  };
  const headerAt = (s) => {
    try {
      const header = before?.section(s).header;
      return header ? ` ${quote(header)}` : ` ${s + 1}`;
    } catch {
      return ` ${s + 1}`;
    }
  };
  const parts = [
    ...(entry.deleteSections ?? []).map((s) => `deleted section${headerAt(s)}`),
    ...(entry.insertSections ?? []).map((i) => `added section${i.section.header ? ` ${quote(i.section.header)}` : ''}`),
    ...(entry.reloadSections ?? []).map((r) => `renamed section${headerAt(r.at)}${r.header ? ` to ${quote(r.header)}` : ''}`),
    ...(entry.moveSections ?? []).map((m) => `moved section${headerAt(m.from)}`),
    ...(entry.deleteRows ?? []).map((path) => `deleted${valueAt(path)}`),
    ...(entry.insertRows ?? []).map((i) => `added ${quote(i.row.value)}`),
    ...(entry.reloadRows ?? []).map((r) => `changed${valueAt(r.at)} to ${quote(r.value)}`),
    ...(entry.moveRows ?? []).map((m) => `moved${valueAt(m.from)}`),
  ];
  return parts.join(', ') || 'no change';
}

/** New-table shapes (no ids) of a past table's sections, for createTable. */
function contents(sections) {
  return sections.map((section) => ({
    header: section.header,
    footer: section.footer,
    rows: section.rows.map((row) => {
      const fresh = { value: row.value };
      if (row.editable === false) fresh.editable = false;
      if (row.movable === false) fresh.movable = false;
      return fresh;
    }),
  }));
}

/**
 * The panel. `client()` gives the current TablecastClient (the page replaces it on reconnect), `el` builds
 * elements, `showError` shows a refusal, `onRestored(name)` opens a restored table.
 */
export class HistoryPanel {
  constructor({ client, el, showError, onRestored }) {
    Object.assign(this, { client, el, showError, onRestored });
    this.table = null;
    this.entries = []; // newest first, with `what` and `who`
    this.oldest = null;
    this.next = null;
    this.chosen = null; // the version shown
    this.button = el('button', { type: 'button', id: 'history-toggle', 'aria-pressed': 'false', 'aria-controls': 'history', text: 'History' });
    this.button.addEventListener('click', () => (this.isOpen ? this.close() : this.open()));
    this.list = el('ol', { class: 'history-list', 'aria-label': 'Changes, newest first' });
    this.more = el('button', { type: 'button', class: 'history-more', hidden: true, text: 'Older changes' });
    this.more.addEventListener('click', () => this.load(true));
    this.view = el('div', { class: 'history-view', hidden: true, 'aria-live': 'polite' });
    const done = el('button', { type: 'button', class: 'history-close', text: 'Done' });
    done.addEventListener('click', () => this.close());
    this.root = el('section', { id: 'history', class: 'history', hidden: true, 'aria-labelledby': 'history-heading' },
      el('div', { class: 'history-head' }, el('h2', { id: 'history-heading', text: 'History' }), done),
      el('div', { class: 'history-body' },
        el('div', { class: 'history-changes' }, this.list, this.more),
        this.view));
  }

  /** Puts the button in `toolbar` (before its spacer) and the panel in `container`, before `before`. */
  mount(toolbar, container, before) {
    toolbar.insertBefore(this.button, toolbar.querySelector('.spacer'));
    container.insertBefore(this.root, before);
  }

  get isOpen() {
    return !this.root.hidden;
  }

  /** The page opened another table (or none): the panel closes. */
  setTable(name) {
    this.table = name;
    this.close();
  }

  open() {
    if (!this.table) return;
    this.root.hidden = false;
    this.button.setAttribute('aria-pressed', 'true');
    this.root.closest('.view')?.classList.add('history-open');
    this.load(false);
  }

  close() {
    this.root.hidden = true;
    this.button.setAttribute('aria-pressed', 'false');
    this.root.closest('.view')?.classList.remove('history-open');
    Object.assign(this, { entries: [], next: null, oldest: null, chosen: null });
    this.list.replaceChildren();
    this.view.replaceChildren();
    this.view.hidden = true;
  }

  /** The table changed: an open list shows the new change. Changes during a load cause one more load after it. */
  changed() {
    if (!this.isOpen) return;
    if (this.loading) {
      this.stale = true;
      return;
    }
    this.loading = this.load(false).finally(() => {
      this.loading = null;
      if (this.stale) {
        this.stale = false;
        this.changed();
      }
    });
  }

  /** Loads the newest page (or, with `older`, the page after the loaded ones) and names rows by their values. */
  async load(older) {
    const table = this.table;
    const client = this.client();
    try {
      const page = await client.history(table, older && this.next !== null ? { to: this.next, limit: PAGE } : { limit: PAGE });
      if (table !== this.table || !this.isOpen) return;
      // The table before the oldest change of the page, replayed forward, names what each change touched.
      const first = page.entries.at(-1);
      let before = null;
      if (first && first.version - 1 >= page.oldest) {
        before = await client.tableAt(table, first.version - 1).catch(() => null);
      }
      for (const entry of [...page.entries].reverse()) {
        entry.what = describe(entry, before);
        try {
          before?.apply({ ...entry, table: undefined });
        } catch {
          before = null;
        }
      }
      if (table !== this.table || !this.isOpen) return;
      this.entries = older ? [...this.entries, ...page.entries] : page.entries;
      this.next = page.next ?? null;
      this.oldest = page.oldest;
      this.renderList();
    } catch (error) {
      this.showError(error);
    }
  }

  renderList() {
    const el = this.el;
    const item = (version, who, time, what) => {
      const button = el('button', {
        type: 'button', class: 'history-entry', 'data-version': String(version), 'aria-pressed': String(this.chosen === version),
      },
      el('span', { class: 'history-version', text: `v${version}` }),
      el('span', { class: 'history-who', text: who }),
      el('span', { class: 'history-when', text: time }),
      el('span', { class: 'history-what', text: what }));
      button.addEventListener('click', () => this.show(version));
      return el('li', {}, button);
    };
    const items = this.entries.map((entry) => item(
      entry.version, entry.origin.name ?? entry.origin.client, when(entry.time), entry.what));
    // The oldest kept version itself: the table as the kept history starts.
    if (this.next === null && this.oldest !== null) {
      items.push(item(this.oldest, '', '', this.oldest === 0 ? 'created' : 'oldest kept version'));
    }
    this.list.replaceChildren(...items);
    this.more.hidden = this.next === null;
  }

  /** Shows the table at `version`, read-only, with the restore action. */
  async show(version) {
    const table = this.table;
    let past;
    try {
      past = await this.client().tableAt(table, version);
    } catch (error) {
      this.showError(error);
      return;
    }
    if (table !== this.table || !this.isOpen) return;
    this.chosen = version;
    for (const button of this.list.querySelectorAll('.history-entry')) {
      button.setAttribute('aria-pressed', String(button.dataset.version === String(version)));
    }
    const el = this.el;
    const sections = past.sections.map((section) => el('div', { class: 'history-section' },
      section.header ? el('h3', { class: 'section-header', text: section.header }) : null,
      el('ul', { class: 'history-rows' }, section.rows.map((row) => el('li', { class: 'history-row' },
        el('span', { class: 'history-value', text: typeof row.value === 'string' ? row.value : JSON.stringify(row.value) })))),
      section.footer ? el('p', { class: 'section-footer', text: section.footer }) : null));
    const name = el('input', { class: 'history-name', value: `${table}-v${version}`.slice(0, 64), maxLength: 64, 'aria-label': 'New table name' });
    const restore = el('form', { class: 'history-restore' }, name,
      el('button', { type: 'submit', class: 'primary', text: 'Restore as a new table' }));
    restore.addEventListener('submit', async (event) => {
      event.preventDefault();
      const newName = name.value.trim();
      try {
        await this.client().createTable(newName, { sections: contents(past.sections), rules: past.rules });
      } catch (error) {
        this.showError(error);
        return;
      }
      this.onRestored(newName);
    });
    const empty = past.sections.every((section) => !section.rows.length);
    this.view.replaceChildren(
      el('p', { class: 'history-caption', text: `“${table}” at version ${version} (read-only)` }),
      ...sections,
      ...(empty ? [el('p', { class: 'muted history-caption', text: 'No rows at this version.' })] : []),
      restore);
    this.view.hidden = false;
  }
}
