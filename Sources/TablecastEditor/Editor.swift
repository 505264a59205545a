import TableModel
import TablecastProtocol

/// What the editor asks the outside world to do after a key or an event (the terminal edge carries it out).
public enum EditorCommand: Hashable, Sendable {
    /// Send an intent whose index paths refer to version `base` (the table as shown).
    case send(Intent, base: UInt64, label: String, requested: RowPath?)
    case beginEditingRow(String)
    case endEditingRow(String)
    case setEditing(Bool)
    /// Pull-to-refresh: resync and report `refreshed`.
    case refresh
    /// Undo / redo this person's last change (the client computes the inverse and sends it like any intent).
    case undo
    case redo
    case quit
}

/// How the connection looks to the person at the keyboard.
public enum ConnectionDisplay: Hashable, Sendable {
    case connecting
    case live
    /// In `seconds`, after losing the connection for `reason` (nil: not known).
    case reconnecting(seconds: Int, reason: String? = nil)
    case closed

    public var text: String {
        switch self {
        case .connecting: "connecting…"
        case .live: "● live"
        case .reconnecting(let seconds, let reason): "reconnecting in \(seconds)s" + (reason.map { ": \($0)" } ?? "")
        case .closed: "closed"
        }
    }
}

/// The line the cursor is on: a section's header line or a row, named by id so that it stays put when others
/// change the table.
public enum CursorItem: Hashable, Sendable {
    case section(String)
    case row(String)
}

/// The editor's whole state as a value: the table as shown, the cursor, the mode, presence and the status line.
/// Keys and server events go in (``handle(_:)``, ``replaceTable(_:)``, …), commands and frames come out. Nothing
/// here touches a terminal or a socket.
public struct Editor: Sendable {
    public enum Mode: Hashable, Sendable {
        case browse
        case input(Input)
        /// Waiting for the one-key confirmation of deleting these rows (in this order).
        case confirmDelete([String])
        /// Waiting for the one-key confirmation of deleting this section and its rows.
        case confirmDeleteSection(String)
        case help
    }

    public struct Input: Hashable, Sendable {
        public enum Purpose: Hashable, Sendable {
            case editRow(String)
            /// A new row after this item (a row: after it; a section line: first in it; nil: first section).
            case addRow(after: CursorItem?)
            /// A new section after this section (nil: first).
            case addSection(after: String?)
            case header(String)
            case footer(String)
        }
        public var purpose: Purpose
        public var text: String
        public var prompt: String
    }

    public struct Status: Hashable, Sendable {
        public var text: String
        public var isError: Bool
    }

    public let tableName: String
    /// This connection's presence key (`presence.you` of the catch-up), so that "here" leaves it out.
    public var me: String
    public var myName: String
    public var table = Table()
    public var loaded = false
    public var connection = ConnectionDisplay.connecting
    /// Who is listed on the table (this connection included), and how many more only watch.
    public var presence: [PresenceEntry] = []
    public var viewers = 0
    public private(set) var cursor: CursorItem?
    /// The cursor's line number, kept so a deleted cursor row hands the cursor to its neighbour.
    private var cursorIndex = 0
    /// A row or section created by this editor that the cursor goes to once it shows up.
    private var pendingCursor: CursorItem?
    public var mode = Mode.browse
    /// Editing mode (`setEditing:`): delete and reorder controls, multi-select.
    public private(set) var editing = false
    public private(set) var selection: Set<String> = []
    public private(set) var clipboard: RowContent?
    public var status: Status?
    public private(set) var refreshing = false
    var scroll = 0

    public init(tableName: String, me: String, myName: String) {
        self.tableName = tableName
        self.me = me
        self.myName = myName
    }

    // MARK: - The table

    /// Every cursor line in order: each section's header line, then its rows.
    public var items: [CursorItem] {
        table.sections.flatMap { section in [CursorItem.section(section.id)] + section.rows.map { .row($0.id) } }
    }

    public func path(ofRow id: String) -> RowPath? {
        for (s, section) in table.sections.enumerated() {
            if let r = section.rows.firstIndex(where: { $0.id == id }) { return RowPath(section: s, row: r) }
        }
        return nil
    }

    public func index(ofSection id: String) -> Int? { table.sections.firstIndex { $0.id == id } }

    /// The section the cursor is in.
    var cursorSection: Int? {
        switch cursor {
        case .section(let id): index(ofSection: id)
        case .row(let id): path(ofRow: id)?.section
        case nil: nil
        }
    }

    var cursorRow: String? { if case .row(let id) = cursor { id } else { nil } }

    /// Shows a new version of the table (a snapshot or a live update): the cursor stays on its row by id (or
    /// moves to the line that took its place when its row is gone), and modes about vanished rows end.
    public mutating func replaceTable(_ newTable: Table) {
        table = newTable
        loaded = true
        let items = self.items
        if let pending = pendingCursor, items.contains(pending) {
            cursor = pending
            pendingCursor = nil
        }
        if let cursor, let i = items.firstIndex(of: cursor) {
            cursorIndex = i
        } else if items.isEmpty {
            cursor = nil
            cursorIndex = 0
        } else {
            if cursor != nil, case .input(let input) = mode, case .editRow = input.purpose {
                status = Status(text: "the row you were editing was deleted by someone else", isError: true)
            }
            cursorIndex = min(cursorIndex, items.count - 1)
            cursor = items[cursorIndex]
        }
        let rowIDs = Set(items.compactMap { if case .row(let id) = $0 { id } else { nil } })
        selection.formIntersection(rowIDs)
        // A selected row that can no longer be deleted (an admin locked it) leaves the selection.
        if !selection.isEmpty {
            for (s, section) in table.sections.enumerated() {
                for (r, row) in section.rows.enumerated()
                where selection.contains(row.id) && table.deleteRefusal(at: RowPath(section: s, row: r)) != nil {
                    selection.remove(row.id)
                }
            }
        }
        switch mode {
        case .input(let input):
            switch input.purpose {
            case .editRow(let id) where !rowIDs.contains(id): mode = .browse
            case .header(let id) where index(ofSection: id) == nil: mode = .browse
            case .footer(let id) where index(ofSection: id) == nil: mode = .browse
            default: break
            }
        case .confirmDelete(let ids):
            let left = ids.filter { rowIDs.contains($0) }
            if left.isEmpty {
                mode = .browse
                status = Status(text: "already deleted", isError: false)
            } else if left != ids {
                mode = .confirmDelete(left)
            }
        case .confirmDeleteSection(let id) where index(ofSection: id) == nil:
            mode = .browse
            status = Status(text: "already deleted", isError: false)
        default: break
        }
    }

    public mutating func setCursor(_ item: CursorItem) {
        guard let i = items.firstIndex(of: item) else { return }
        cursor = item
        cursorIndex = i
    }

    /// The presence to announce again after a (re)subscribe: a new connection starts with none.
    public var presenceCommands: [EditorCommand] {
        var commands: [EditorCommand] = editing ? [.setEditing(true)] : []
        switch mode {
        case .input(let input):
            if case .editRow(let id) = input.purpose { commands.append(.beginEditingRow(id)) }
        case .confirmDelete(let ids) where ids.count == 1:
            commands.append(.beginEditingRow(ids[0]))
        default: break
        }
        return commands
    }

    // MARK: - Results from the server

    /// An intent was acknowledged: a created row or section gets the cursor; a move the server retargeted says so.
    /// `ack` is `nil` when the intent turned out to change nothing (answered without asking the server).
    public mutating func acked(label: String, ack: ServerMessage.Ack?, requested: RowPath?) {
        guard let ack else {
            status = Status(text: "\(label): nothing to do", isError: false)
            return
        }
        let created: CursorItem? =
            switch label {
            case "insert", "paste": ack.created.first.map(CursorItem.row)
            case "new section": ack.created.first.map(CursorItem.section)
            default: nil
            }
        if let created {
            if items.contains(created) { setCursor(created) } else { pendingCursor = created }
        }
        var text = "\(label): done (v\(ack.version))"
        if ack.noop { text = "\(label): nothing to do" }
        if label == "move", let requested, let resolved = ack.resolved.last, case .array(let parts) = resolved,
            parts.count == 2, case .number(let s) = parts[0], case .number(let r) = parts[1]
        {
            let landed = RowPath(section: Int(s), row: Int(r))
            text = landed == requested ? "moved to \(landed) (v\(ack.version))" : "moved: the server put it at \(landed), not \(requested) (v\(ack.version))"
        }
        status = Status(text: text, isError: false)
    }

    /// An undo or redo found no step to take.
    public mutating func nothingTo(_ label: String) {
        status = Status(text: "nothing to \(label)", isError: false)
    }

    /// An intent (or refresh) was refused: the status line shows the server's code and message; the table is
    /// whatever the server says it is.
    public mutating func failed(label: String, message: String) {
        if label == "refresh" { refreshing = false }
        status = Status(text: "\(label) failed: \(message)", isError: true)
    }

    public mutating func refreshed(version: UInt64) {
        refreshing = false
        status = Status(text: "refreshed at v\(version)", isError: false)
    }

    // MARK: - Keys

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
            status = Status(text: editing ? "editing mode: space selects, D deletes the selected rows" : "done editing", isError: false)
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

    private mutating func startHeaderFooter(header: Bool, _ id: String) -> [EditorCommand] {
        guard let s = index(ofSection: id) else { return [] }
        let section = table.sections[s]
        let text = (header ? section.header : section.footer) ?? ""
        mode = .input(
            Input(purpose: header ? .header(id) : .footer(id), text: text, prompt: header ? "Section header" : "Section footer"))
        return []
    }

    private mutating func moveCursor(by delta: Int, _ items: [CursorItem]) {
        guard !items.isEmpty else { return }
        let current = cursor.flatMap { items.firstIndex(of: $0) } ?? 0
        cursorIndex = max(0, min(items.count - 1, current + delta))
        cursor = items[cursorIndex]
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
        return [.send(.moveSection(from: SectionRef(from, id: id), to: to), base: table.version, label: "move section", requested: nil)]
    }

    // MARK: - Rules

    // Refusals in the status line's words. The decisions are the table's own (``Table/deleteRefusal(at:)``,
    // ``Table/moveRefusal(at:)``), the ones the server's engine enforces, so the editor refuses at once, without a
    // round trip, exactly what the server would.

    /// Why the row with this id cannot be deleted, or nil when it can (or it is not in the table).
    func deleteRefusal(_ id: String) -> String? {
        guard let path = path(ofRow: id) else { return nil }
        return table.deleteRefusal(at: path).map { Self.text($0, "deleted") }
    }

    /// Why the row at `path` cannot be moved, or nil when it can.
    func moveRefusal(at path: RowPath) -> String? {
        table.moveRefusal(at: path).map { Self.text($0, "moved") }
    }

    /// A refusal to delete or move a row (`verb`: "deleted" or "moved") as the status line says it.
    private static func text(_ refusal: RowRefusal, _ verb: String) -> String {
        switch refusal {
        case .notEditable: "this row is locked: it cannot be \(verb)"
        case .insertionControl, .reservedLastRow: "this row is an add-item placeholder: it cannot be \(verb)"
        case .noDeleteControl, .notMovable: "this row cannot be \(verb)"
        case .noMoves: "rows cannot be moved in this table"
        }
    }

    private mutating func handleInput(_ key: Key, _ input: Input) -> [EditorCommand] {
        var input = input
        switch key {
        case .character(let c):
            input.text.append(c)
            mode = .input(input)
        case .backspace:
            if !input.text.isEmpty { input.text.removeLast() }
            mode = .input(input)
        case .ctrl("u"):
            input.text = ""
            mode = .input(input)
        case .escape, .ctrl("c"):
            mode = .browse
            if case .editRow(let id) = input.purpose { return [.endEditingRow(id)] }
        case .enter:
            return commit(input)
        default: break
        }
        return []
    }

    private mutating func commit(_ input: Input) -> [EditorCommand] {
        let base = table.version
        switch input.purpose {
        case .editRow(let id):
            guard let value = parseValue(input.text) else { return [] }
            mode = .browse
            guard let path = path(ofRow: id) else { return [.endEditingRow(id)] }
            return [.send(.edit(RowRef(path, id: id), value: value), base: base, label: "edit", requested: path), .endEditingRow(id)]
        case .addRow(let after):
            guard let value = parseValue(input.text) else { return [] }
            mode = .browse
            guard let at = insertionPath(after: after) ?? insertionPath(after: cursor) else { return [] }
            return [.send(.insert(at: at, row: RowContent(value: value)), base: base, label: "insert", requested: at)]
        case .addSection(let after):
            mode = .browse
            let at = after.flatMap { index(ofSection: $0) }.map { $0 + 1 } ?? 0
            let header = input.text.isEmpty ? nil : input.text
            return [.send(.insertSection(at: at, section: SectionContent(header: header)), base: base, label: "new section", requested: nil)]
        case .header(let id), .footer(let id):
            mode = .browse
            guard let s = index(ofSection: id) else { return [] }
            let text: String? = input.text.isEmpty ? nil : input.text
            let intent: Intent
            if case .header = input.purpose {
                intent = .editSection(SectionRef(s, id: id), header: .some(text))
            } else {
                intent = .editSection(SectionRef(s, id: id), footer: .some(text))
            }
            return [.send(intent, base: base, label: "section", requested: nil)]
        }
    }

    private mutating func handleConfirm(_ key: Key, _ ids: [String]) -> [EditorCommand] {
        mode = .browse
        var commands: [EditorCommand] = []
        if key == .character("y") || key == .character("Y") {
            let refs = ids.compactMap { id in path(ofRow: id).map { RowRef($0, id: id) } }
            if refs.count == 1 {
                commands.append(.send(.delete(refs[0]), base: table.version, label: "delete", requested: nil))
            } else if !refs.isEmpty {
                commands.append(
                    .send(.batch(ClientBatch(deleteRows: refs)), base: table.version, label: "delete \(refs.count) rows", requested: nil))
                selection = []
            }
        } else {
            status = Status(text: "delete cancelled", isError: false)
        }
        if ids.count == 1 { commands.append(.endEditingRow(ids[0])) }
        return commands
    }

    private mutating func handleConfirmSection(_ key: Key, _ id: String) -> [EditorCommand] {
        mode = .browse
        guard key == .character("y") || key == .character("Y") else {
            status = Status(text: "delete cancelled", isError: false)
            return []
        }
        guard let s = index(ofSection: id) else { return [] }
        return [.send(.deleteSection(SectionRef(s, id: id)), base: table.version, label: "delete section", requested: nil)]
    }

    /// Typed text is a string; text starting with `=` is JSON (`=42`, `=true`, `={"a":1}`, `="=x"`).
    mutating func parseValue(_ text: String) -> JSONValue? {
        guard text.hasPrefix("=") else { return .string(text) }
        do {
            return try JSONValue(parsing: String(text.dropFirst()))
        } catch {
            status = Status(text: "not JSON after '=': \(error)", isError: true)
            return nil
        }
    }

    /// A value as shown: strings plainly, anything else as compact JSON.
    public static func display(_ value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        return value.jsonText
    }

    /// A value as put in the input line for editing (the inverse of ``parseValue(_:)``).
    public static func inputText(_ value: JSONValue) -> String {
        if case .string(let text) = value, !text.hasPrefix("=") { return text }
        return "=" + value.jsonText
    }
}
