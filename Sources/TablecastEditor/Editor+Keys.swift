import TableModel

/// Keys: each mode's handler, and in browse mode the cursor and what each key does to the line it is on. What
/// the table's rules refuse is refused at once (Editor+Permissions.swift).
extension Editor {
    /// Handles one key and returns what to send.
    public mutating func handle(_ key: Key) -> [EditorCommand] {
        switch mode {
        case .help:
            mode = .browse
            if key == .character("q") { return [.quit] }
            return []
        case .input(let input):
            return handleInput(key, input)
        case .confirmDelete(let ids):
            return handleConfirm(key, ids)
        case .confirmDeleteSection(let id):
            return handleConfirmSection(key, id)
        case .browse:
            return handleBrowse(key)
        }
    }

    private mutating func handleBrowse(_ key: Key) -> [EditorCommand] {
        let items = self.items
        switch key {
        case .up, .character("k"): moveCursor(by: -1, items)
        case .down, .character("j"): moveCursor(by: 1, items)
        case .pageUp: moveCursor(by: -10, items)
        case .pageDown: moveCursor(by: 10, items)
        case .home, .character("g"): moveCursor(by: -items.count, items)
        case .end, .character("G"): moveCursor(by: items.count, items)
        case .character("q"), .ctrl("c"), .ctrl("d"): return [.quit]
        case .character("?"): mode = .help
        case .escape: status = nil
        case .character("a"), .character("+"), .character("i"):
            guard !table.sections.isEmpty else {
                status = Status(text: "no section yet: press A to add one", isError: true)
                return []
            }
            mode = .input(Input(purpose: .addRow(after: cursor), text: "", prompt: "New row"))
        case .character("A"):
            let after = cursorSection.map { table.sections[$0].id }
            mode = .input(Input(purpose: .addSection(after: after), text: "", prompt: "New section header"))
        case .enter, .character("e"):
            switch cursor {
            case .row(let id):
                guard let path = path(ofRow: id), let row = table.row(at: path) else { return [] }
                if table.isPlaceholder(path) {
                    // The insertion control: a new row goes just above the placeholder.
                    mode = .input(Input(purpose: .addRow(after: cursor), text: "", prompt: "New row"))
                    return []
                }
                if table.reloadRefusal(at: path) != nil {
                    status = Status(text: "this row is not editable", isError: true)
                    return []
                }
                mode = .input(Input(purpose: .editRow(id), text: Self.inputText(row.value), prompt: "Edit"))
                return [.beginEditingRow(id)]
            case .section(let id):
                return startHeaderFooter(header: true, id)
            case nil: break
            }
        case .character("x"):
            return toggleDone()
        case .character("h"):
            if let s = cursorSection { return startHeaderFooter(header: true, table.sections[s].id) }
        case .character("f"):
            if let s = cursorSection { return startHeaderFooter(header: false, table.sections[s].id) }
        case .character("d"), .delete:
            switch cursor {
            case .row(let id):
                if let refusal = deleteRefusal(id) {
                    status = Status(text: refusal, isError: true)
                    return []
                }
                mode = .confirmDelete([id])
                return [.beginEditingRow(id)]
            case .section(let id):
                mode = .confirmDeleteSection(id)
            case nil:
                status = Status(text: "nothing to delete", isError: true)
            }
        case .character("D"):
            guard editing, !selection.isEmpty else {
                status = Status(text: "select rows with space in editing mode (E) first", isError: true)
                return []
            }
            let ids = items.compactMap { item -> String? in
                if case .row(let id) = item, selection.contains(id) { id } else { nil }
            }
            mode = .confirmDelete(ids)
            if ids.count == 1 { return [.beginEditingRow(ids[0])] }
        case .character("K"):
            if case .section(let id) = cursor { return moveSection(id, by: -1) }
            return move(.up)
        case .character("J"):
            if case .section(let id) = cursor { return moveSection(id, by: 1) }
            return move(.down)
        case .character("["): return move(.previousSection)
        case .character("]"): return move(.nextSection)
        case .character("E"):
            editing.toggle()
            if !editing { selection = [] }
            status = Status(
                text: editing ? "editing mode: space selects, D deletes the selected rows" : "done editing",
                isError: false)
            return [.setEditing(editing)]
        case .character(" "):
            // Selects in place, as a tap on a row's checkbox does: the cursor stays on the row.
            guard editing, let id = cursorRow else { return [] }
            if selection.contains(id) {
                selection.remove(id)
            } else if let refusal = deleteRefusal(id) {
                status = Status(text: refusal, isError: true)
            } else {
                selection.insert(id)
            }
        case .character("c"), .character("y"):
            guard let id = cursorRow, let path = path(ofRow: id), let row = table.row(at: path) else {
                status = Status(text: "put the cursor on a row to copy it", isError: true)
                return []
            }
            // The value only: the row's flags are an admin's decision, and a paste makes an ordinary row.
            clipboard = RowContent(value: row.value)
            status = Status(text: "copied “\(Self.display(row.value))”: p pastes it after the cursor", isError: false)
        case .character("p"), .character("v"):
            guard let clipboard else {
                status = Status(text: "nothing copied yet (c copies a row)", isError: true)
                return []
            }
            guard let at = insertionPath(after: cursor) else { return [] }
            return [.send(.insert(at: at, row: clipboard), base: table.version, label: "paste", requested: at)]
        case .character("u"):
            return [.undo]
        case .character("U"), .ctrl("r"):
            return [.redo]
        case .character("r"):
            refreshing = true
            return [.refresh]
        default: break
        }
        return []
    }

    /// Ticks or unticks the cursor's item with a patch of `done` alone, so that others' changes of its other
    /// fields stay.
    private mutating func toggleDone() -> [EditorCommand] {
        guard let id = cursorRow, let path = path(ofRow: id), let row = table.row(at: path),
            Self.title(row.value) != nil
        else {
            status = Status(text: "x ticks an item: a row like {\"title\": …, \"done\": false}", isError: true)
            return []
        }
        if table.reloadRefusal(at: path) != nil {
            status = Status(text: "this row is not editable", isError: true)
            return []
        }
        let done: JSONValue = .bool(Self.done(row.value) != true)
        return [
            .send(
                .patch(RowRef(path, id: id), patch: ["done": done]), base: table.version, label: "done", requested: path
            )
        ]
    }

    private mutating func startHeaderFooter(header: Bool, _ id: String) -> [EditorCommand] {
        guard let s = index(ofSection: id) else { return [] }
        let section = table.sections[s]
        let text = (header ? section.header : section.footer) ?? ""
        mode = .input(
            Input(
                purpose: header ? .header(id) : .footer(id), text: text,
                prompt: header ? "Section header" : "Section footer"))
        return []
    }

    /// Where a new row goes: after the cursor's row (before it when it is an add-item placeholder, whose
    /// insertion control adds above it), or first in the cursor's section.
    func insertionPath(after item: CursorItem?) -> RowPath? {
        switch item {
        case .row(let id):
            guard let path = path(ofRow: id) else { return nil }
            return RowPath(section: path.section, row: table.isPlaceholder(path) ? path.row : path.row + 1)
        case .section(let id):
            return index(ofSection: id).map { RowPath(section: $0, row: 0) }
        case nil:
            return table.sections.isEmpty ? nil : RowPath(section: 0, row: 0)
        }
    }

    enum Direction { case up, down, previousSection, nextSection }

    /// The reorder control: proposes a destination; the server may retarget it, and the row shows up where the
    /// server put it.
    private mutating func move(_ direction: Direction) -> [EditorCommand] {
        guard let id = cursorRow, let from = path(ofRow: id) else {
            status = Status(text: "put the cursor on a row to move it", isError: true)
            return []
        }
        if let refusal = moveRefusal(at: from) {
            status = Status(text: refusal, isError: true)
            return []
        }
        let count = table.sections[from.section].rows.count
        let to: RowPath
        switch direction {
        case .up:
            guard from.row > 0 else {
                if from.section > 0 { return move(.previousSection) }
                return []
            }
            to = RowPath(section: from.section, row: from.row - 1)
        case .down:
            guard from.row + 1 < count else {
                if from.section + 1 < table.sections.count { return move(.nextSection) }
                return []
            }
            to = RowPath(section: from.section, row: from.row + 1)
        case .previousSection:
            guard from.section > 0 else { return [] }
            to = RowPath(section: from.section - 1, row: table.sections[from.section - 1].rows.count)
        case .nextSection:
            guard from.section + 1 < table.sections.count else { return [] }
            to = RowPath(section: from.section + 1, row: 0)
        }
        return [.send(.move(from: RowRef(from, id: id), to: to), base: table.version, label: "move", requested: to)]
    }

    /// The section control: moves the section one place up (-1) or down (+1), as `moveSection:toSection:`.
    private mutating func moveSection(_ id: String, by step: Int) -> [EditorCommand] {
        guard let from = index(ofSection: id) else { return [] }
        let to = from + step
        guard table.sections.indices.contains(to) else { return [] }
        return [
            .send(
                .moveSection(from: SectionRef(from, id: id), to: to), base: table.version, label: "move section",
                requested: nil)
        ]
    }
}
