import TableModel
import TablecastProtocol

/// The editor's whole state as a value: the table as shown, the cursor, the mode, presence and the status line.
/// Keys and server events go in (``handle(_:)``, ``replaceTable(_:)``, …), commands and frames come out. Nothing
/// here touches a terminal or a socket.
public struct Editor: Sendable {
    /// What keys do now.
    public enum Mode: Hashable, Sendable {
        /// Moving the cursor and acting on its line.
        case browse
        /// Typing into the input line.
        case input(Input)
        /// Waiting for the one-key confirmation of deleting these rows (in this order).
        case confirmDelete([String])
        /// Waiting for the one-key confirmation of deleting this section and its rows.
        case confirmDeleteSection(String)
        /// The help screen; any key closes it.
        case help
    }

    /// The input line: what it is for, the text typed so far and its prompt.
    public struct Input: Hashable, Sendable {
        /// What Enter does with the text.
        public enum Purpose: Hashable, Sendable {
            /// Replaces the value of the row with this id.
            case editRow(String)
            /// A new row after this item (a row: after it; a section line: first in it; nil: first section).
            case addRow(after: CursorItem?)
            /// A new section after this section (nil: first).
            case addSection(after: String?)
            /// Sets the header of the section with this id (empty text removes it).
            case header(String)
            /// Sets the footer of the section with this id (empty text removes it).
            case footer(String)
        }
        /// What Enter does with the text.
        public var purpose: Purpose
        /// The text typed so far.
        public var text: String
        /// The words before it.
        public var prompt: String
    }

    /// The status line: what the last key or answer did, and whether it is a refusal or failure.
    public struct Status: Hashable, Sendable {
        /// The line's words.
        public var text: String
        /// Whether it is shown as an error.
        public var isError: Bool
    }

    /// The table being edited.
    public let tableName: String
    /// This connection's presence key (`presence.you` of the catch-up), so that "here" leaves it out.
    public var me: String
    /// The name shown to others.
    public var myName: String
    /// The table as shown: the replica with this editor's changes not yet answered.
    public var table = Table()
    /// Whether a first snapshot has come.
    public var loaded = false
    /// The connection's state, for the status bar.
    public var connection = ConnectionDisplay.connecting
    /// Who is listed on the table (this connection included), and how many more only watch.
    public var presence: [PresenceEntry] = []
    public var viewers = 0
    /// The line the cursor is on; nil in an empty table.
    public private(set) var cursor: CursorItem?
    /// The cursor's line number, kept so a deleted cursor row hands the cursor to its neighbour.
    private var cursorIndex = 0
    /// A row or section created by this editor that the cursor goes to once it shows up.
    private var pendingCursor: CursorItem?
    /// What keys do now.
    public var mode = Mode.browse
    /// Editing mode (`setEditing:`): delete and reorder controls, multi-select.
    public internal(set) var editing = false
    /// The rows ticked in editing mode, for `D`.
    public internal(set) var selection: Set<String> = []
    /// The row content `c` copied (its value only), for `p`.
    public internal(set) var clipboard: RowContent?
    /// The status line, if anything is to be said.
    public var status: Status?
    /// Waiting for `refreshed` after `r`.
    public internal(set) var refreshing = false
    /// The first body line shown (the frame scrolls to keep the cursor in view).
    var scroll = 0

    /// An editor of table `tableName` for this connection (presence key `me`) and person (`myName`), loading.
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

    /// Where the row with this id is in the table as shown, or nil.
    public func path(ofRow id: String) -> RowPath? {
        for (s, section) in table.sections.enumerated() {
            if let r = section.rows.firstIndex(where: { $0.id == id }) { return RowPath(section: s, row: r) }
        }
        return nil
    }

    /// Where the section with this id is in the table as shown, or nil.
    public func index(ofSection id: String) -> Int? { table.sections.firstIndex { $0.id == id } }

    /// The section the cursor is in.
    var cursorSection: Int? {
        switch cursor {
        case .section(let id): index(ofSection: id)
        case .row(let id): path(ofRow: id)?.section
        case nil: nil
        }
    }

    /// The id of the row the cursor is on, if it is on a row.
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

    /// Puts the cursor on `item` if it is in the table.
    public mutating func setCursor(_ item: CursorItem) {
        guard let i = items.firstIndex(of: item) else { return }
        cursor = item
        cursorIndex = i
    }

    /// Moves the cursor `delta` lines in `items` (the current ``items``), stopping at the first and last.
    mutating func moveCursor(by delta: Int, _ items: [CursorItem]) {
        guard !items.isEmpty else { return }
        let current = cursor.flatMap { items.firstIndex(of: $0) } ?? 0
        cursorIndex = max(0, min(items.count - 1, current + delta))
        cursor = items[cursorIndex]
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
            text =
                landed == requested
                ? "moved to \(landed) (v\(ack.version))"
                : "moved: the server put it at \(landed), not \(requested) (v\(ack.version))"
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

    /// The refresh `r` asked for is done: the table is in step at `version`.
    public mutating func refreshed(version: UInt64) {
        refreshing = false
        status = Status(text: "refreshed at v\(version)", isError: false)
    }

}
