import TableModel

/// A message from a client, decoded and checked for shape (not yet for meaning: the server checks access and the
/// table model checks the edit).
public struct ClientMessage: Hashable, Sendable {
    /// The client-chosen reference echoed in the response; the idempotency key of an edit intent.
    public var ref: String?
    /// What the client asks for.
    public var body: Body

    public init(ref: String? = nil, _ body: Body) {
        self.ref = ref
        self.body = body
    }

    /// The requests of protocol v1.
    public enum Body: Hashable, Sendable {
        /// Introduces the client: its stable id (for idempotency), optional display name (a named connection is
        /// listed in presence; one without a name only counts as a viewer) and optional token.
        case hello(client: String, name: String?, token: String?)
        /// Replaces the connection's token with a newer one for the same user (a signed token about to expire).
        case refreshToken(token: String)
        case createTable(table: String, sections: [SectionContent], rules: RulesPatch)
        case dropTable(table: String)
        case setRules(table: String, rules: RulesPatch)
        case listTables
        /// Catch-up (a snapshot, or the updates after `since` when `epoch` matches), then live updates.
        case subscribe(table: String, since: UInt64?, epoch: String?)
        /// Pull-to-refresh: the same catch-up as subscribe without subscribing.
        case refresh(table: String, since: UInt64?, epoch: String?)
        case unsubscribe(table: String)
        /// An edit: index paths as the client saw the table at `base` (nil: the current version).
        case intent(table: String, base: UInt64?, Intent)
        /// Presence: editing mode on or off (`setEditing:animated:`).
        case editing(table: String, on: Bool)
        /// Presence: a swipe or edit began on a row.
        case beginEditingRow(table: String, row: String)
        /// Presence: the swipe or edit on a row ended.
        case endEditingRow(table: String, row: String)
        /// A page of the table's history: the kept changes with versions in `from...to` (nil: from the oldest
        /// kept, to the latest), at most `limit` (nil: the server's default), newest or oldest first.
        case history(table: String, from: UInt64?, to: UInt64?, limit: Int?, newestFirst: Bool)
        /// The table as it was at `version`, without subscribing.
        case snapshotAt(table: String, version: UInt64)
    }

    /// The table the message is about, if any.
    public var table: String? {
        switch body {
        case .hello, .refreshToken, .listTables: nil
        case .createTable(let table, _, _), .dropTable(let table), .setRules(let table, _),
            .subscribe(let table, _, _), .refresh(let table, _, _), .unsubscribe(let table),
            .intent(let table, _, _), .editing(let table, _), .beginEditingRow(let table, _),
            .endEditingRow(let table, _), .history(let table, _, _, _, _), .snapshotAt(let table, _):
            table
        }
    }
}

/// A partial change to a table's rules: the fields a client gives; the rest keep their values.
public struct RulesPatch: Hashable, Sendable {
    public var moves: TableRules.Moves?
    public var reserveLastRow: Bool?
    public var deleteConfirmationTitle: String?
    public var maxSections: Int?
    public var maxRowsPerSection: Int?
    public var maxValueBytes: Int?

    public init(
        moves: TableRules.Moves? = nil, reserveLastRow: Bool? = nil, deleteConfirmationTitle: String? = nil,
        maxSections: Int? = nil, maxRowsPerSection: Int? = nil, maxValueBytes: Int? = nil
    ) {
        self.moves = moves
        self.reserveLastRow = reserveLastRow
        self.deleteConfirmationTitle = deleteConfirmationTitle
        self.maxSections = maxSections
        self.maxRowsPerSection = maxRowsPerSection
        self.maxValueBytes = maxValueBytes
    }

    /// `rules` with this patch's fields replaced.
    public func applied(to rules: TableRules) -> TableRules {
        var rules = rules
        if let moves { rules.moves = moves }
        if let reserveLastRow { rules.reserveLastRow = reserveLastRow }
        if let deleteConfirmationTitle { rules.deleteConfirmationTitle = deleteConfirmationTitle }
        if let maxSections { rules.maxSections = maxSections }
        if let maxRowsPerSection { rules.maxRowsPerSection = maxRowsPerSection }
        if let maxValueBytes { rules.maxValueBytes = maxValueBytes }
        return rules
    }
}
