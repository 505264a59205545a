import TableModel
import TablecastProtocol

extension Editor {
    /// Every key, as `?` shows it and the README lists it.
    public static let keyTable: [(keys: String, action: String)] = [
        ("↑ ↓  k j", "move the cursor (g G: first, last)"),
        ("a  +", "add a row after the cursor (insertion control / Add; on a ⊕ row: before it)"),
        ("A", "add a new section after the cursor's section"),
        ("Enter  e", "edit the row's value in place (on a section line: its header; on a ⊕ row: add a row)"),
        ("h  f", "edit the section's header / footer"),
        ("x", "tick / untick an item's done mark (a row {\"title\", \"done\"}): a patch of done alone"),
        ("d  Del", "delete the row (swipe-to-delete), or on a section line the section; y confirms"),
        ("K  J", "move the row up / down (reorder control), or on a section line the section"),
        ("[  ]", "move the row into the previous / next section"),
        ("E", "editing mode on/off (delete & reorder controls, multi-select)"),
        ("Space", "in editing mode: select / unselect the row (the cursor stays)"),
        ("D", "in editing mode: delete all selected rows in one batch"),
        ("c  p", "copy the row's value / paste it as a new row after the cursor"),
        ("u  U  Ctrl-R", "undo your last change / redo it (others' changes stay)"),
        ("r", "refresh (pull-to-refresh): resync from the server"),
        ("Esc", "cancel input, clear the status line"),
        ("?", "this help (any key closes it)"),
        ("q  Ctrl-C", "quit"),
        ("input", "text is stored as a string; start with = for JSON (=42, =true, ={\"a\":1})"),
    ]

    /// The screen for a terminal of `width` × `height`. Scrolls so the cursor's line is visible.
    public mutating func frame(width: Int, height: Int) -> Frame {
        var lines: [String] = []
        let others = presence.filter { $0.key != me }
        let watching = viewers > 0 ? " · \(viewers) watching" : ""
        let version = loaded ? "v\(table.version)" : "v–"
        lines.append(
            " \(tableName) · \(version) · \(connection.text)\(refreshing ? " · refreshing…" : "")\(editing ? " · EDITING" : "") · you: \(myName)"
        )
        if others.isEmpty {
            lines.append(" here: only you" + watching)
        } else {
            lines.append(
                " here: "
                    + others.map { entry in
                        var text = entry.name
                        if entry.editing { text += " (editing mode)" }
                        if let row = entry.row {
                            let value =
                                path(ofRow: row).flatMap { table.row(at: $0) }.map { Self.display($0.value) } ?? row
                            text += " ✎ \(value)"
                        }
                        return text
                    }.joined(separator: ", ") + watching)
        }
        lines.append(String(repeating: "─", count: max(0, width)))

        let bodyHeight = max(1, height - 5)
        var body: [String] = []
        var cursorLine = 0
        if case .help = mode {
            body.append(" Keys")
            let keyWidth = Self.keyTable.map { DisplayWidth.of($0.keys) }.max() ?? 0
            for entry in Self.keyTable {
                body.append(
                    "  " + entry.keys + String(repeating: " ", count: keyWidth - DisplayWidth.of(entry.keys)) + "  "
                        + entry.action)
            }
            scroll = 0
        } else if !loaded {
            body.append(" loading \(tableName)…")
        } else if table.sections.isEmpty {
            body.append(" (no sections: press A to add one)")
        } else {
            var editors: [String: [String]] = [:]
            for entry in others { if let row = entry.row { editors[row, default: []].append(entry.name) } }
            for (s, section) in table.sections.enumerated() {
                let onSection = cursor == .section(section.id)
                if onSection { cursorLine = body.count }
                body.append((onSection ? "▶ " : "  ") + "▼ " + (section.header ?? "Section \(s + 1)"))
                if section.rows.isEmpty { body.append("      (no rows)") }
                for (r, row) in section.rows.enumerated() {
                    let here = cursor == .row(row.id)
                    if here { cursorLine = body.count }
                    var left = here ? "▶   " : "    "
                    let path = RowPath(section: s, row: r)
                    let placeholder = table.isPlaceholder(path)
                    if editing {
                        // The row's editing control: ⊖ delete, ⊕ insertion (add-item placeholder), none.
                        let deletable = table.deleteRefusal(at: path) == nil
                        left +=
                            deletable
                            ? (selection.contains(row.id) ? "[x] ⊖ " : "[ ] ⊖ ") : placeholder ? "    ⊕ " : "      "
                    } else if placeholder {
                        left += "⊕ "
                    }
                    left += Self.display(row.value)
                    if !row.editable { left += "  (locked)" }
                    // Inserted here and not yet committed by the server (a provisional id).
                    if OptimisticTable.isProvisional(row.id) { left += "  (sending…)" }
                    var right = editors[row.id].map { "✎ " + $0.joined(separator: ", ") } ?? ""
                    if editing && table.moveRefusal(at: path) == nil { right += right.isEmpty ? "≡" : "  ≡" }
                    body.append(Self.join(left, right, width: width))
                }
                if let footer = section.footer { body.append("    └ " + footer) }
            }
        }
        if cursorLine < scroll { scroll = cursorLine }
        if cursorLine >= scroll + bodyHeight { scroll = cursorLine - bodyHeight + 1 }
        scroll = max(0, min(scroll, max(0, body.count - bodyHeight)))
        let visible = Array(body.dropFirst(scroll).prefix(bodyHeight))
        lines += visible
        lines += Array(repeating: "", count: bodyHeight - visible.count)

        // Status line, then the prompt or the key hints.
        var statusText = refreshing ? "refreshing…" : ""
        if let status {
            statusText += (statusText.isEmpty ? "" : "  ") + (status.isError ? "✗ " : "") + status.text
        }
        lines.append(" " + statusText)
        switch mode {
        case .input(let input):
            lines.append(
                " \(input.prompt): " + Self.tail(input.text, width: max(1, width - DisplayWidth.of(input.prompt) - 5))
                    + "█")
        case .confirmDeleteSection(let id):
            let section = index(ofSection: id).map { table.sections[$0] }
            let name = section.map { $0.header.map { "“\($0)”" } ?? "this section" } ?? "this section"
            let count = section?.rows.count ?? 0
            lines.append(
                " Section \(name) and its \(count) row\(count == 1 ? "" : "s"): [y] \(table.rules.deleteConfirmationTitle)   [any other key] Cancel"
            )
        case .confirmDelete(let ids):
            let title = table.rules.deleteConfirmationTitle
            let what: String
            if ids.count == 1, let path = path(ofRow: ids[0]), let row = table.row(at: path) {
                what = "“\(Self.display(row.value))”"
            } else {
                what = "\(ids.count) rows"
            }
            lines.append(" \(what): [y] \(title)   [any other key] Cancel")
        default:
            lines.append(
                " ? help · a add · e edit · x done · d delete · K/J move · E editing · c/p copy/paste · u/U undo/redo · r refresh · q quit"
            )
        }
        return Frame(width: width, height: height, lines: lines)
    }

    /// `left` and `right` on one line of `width` columns, `right` flush right; `left` is cut first.
    static func join(_ left: String, _ right: String, width: Int) -> String {
        guard !right.isEmpty else { return left }
        let rightWidth = DisplayWidth.of(right)
        let leftWidth = max(0, width - rightWidth - 1)
        return DisplayWidth.fit(left, leftWidth) + " " + right
    }

    /// The end of `text` that fits in `width` columns (the input line scrolls with typing).
    static func tail(_ text: String, width: Int) -> String {
        var out: [Character] = []
        var used = 0
        for character in text.reversed() {
            let w = DisplayWidth.of(character)
            if used + w > width { break }
            out.append(character)
            used += w
        }
        return String(out.reversed())
    }
}
