import TableModel
import TablecastProtocol
import WebSocketTransport

/// What the server knows of one connection: who is behind it, what it may do, how it behaves.
struct ConnectionSession {
    let id: WebSocketConnectionID
    var client: String
    /// The name shown for it: its token's, else the one given in `hello`, if any.
    var name: String?
    /// The name given in `hello`, which stands in whenever its token names nobody.
    var helloName: String?
    /// The client chose its id in `hello` (so its refs are kept across reconnects).
    var stable = false
    /// What its token lets it do, once `hello` gave one (or on a server without tokens).
    var credential: Credential?
    /// The token given in `hello` (or `refreshToken`), checked again when the access files are reloaded. Never
    /// logged.
    var token: String?
    /// Why the token given in `hello` was refused, while the connection has none: its requests are refused with
    /// this reason, which tells a client more than that a token is needed.
    var refusedToken: String?
    /// Closed by the server (its token expired or was revoked); its close is on the way.
    var closing = false
    var saidHello = false
    /// Paces edit intents, subscribes and refreshes.
    var bucket: TokenBucket
    /// Bad messages since the last good one; too many in a row and the connection is closed.
    var consecutiveBadMessages = 0
    /// Tables this connection is subscribed to, so its presence is cleared when it closes.
    var subscriptions: Set<String> = []

    init(id: WebSocketConnectionID, anonymousClient: String, intentsPerSecond: Int) {
        self.id = id
        client = anonymousClient
        bucket = TokenBucket(rate: Double(intentsPerSecond), burst: Double(intentsPerSecond))
    }

    var requester: Requester {
        Requester(
            connection: id, client: client, name: name, user: credential?.user, stable: stable,
            principal: credential?.principal ?? "")
    }
}

extension ClientMessage {
    /// The role this message needs on its table.
    var neededRole: Role {
        switch body {
        case .hello, .refreshToken, .listTables, .subscribe, .refresh, .unsubscribe, .history, .snapshotAt: .read
        case .editing, .beginEditingRow, .endEditingRow: .write
        case .createTable, .dropTable, .setRules: .admin
        case .intent(_, _, let intent): intent.setsRowFlags ? .admin : .write
        }
    }
}

extension Intent {
    /// Whether the intent sets a row's `editable`, `movable` or `editingStyle` flag, which only admins may do.
    var setsRowFlags: Bool {
        // Row intents (most of them) are answered without building their batch.
        switch self {
        case .delete, .move, .patch, .deleteSection, .moveSection: return false
        case .insert(_, let row): return row.setsFlags
        case .edit(_, _, let editable, let movable, let editingStyle):
            return editable != nil || movable != nil || editingStyle != nil
        case .insertSection, .editSection, .batch: break
        }
        let batch = clientBatch
        let inserted =
            batch.insertRows.map(\.row) + batch.insertSections.flatMap(\.section.rows)
            + batch.reloadSections.flatMap { $0.rows ?? [] }
        return inserted.contains(where: \.setsFlags)
            || batch.reloadRows.contains { $0.editable != nil || $0.movable != nil || $0.editingStyle != nil }
    }
}

extension RowContent {
    /// Whether a new row has a flag other than its default.
    fileprivate var setsFlags: Bool { !editable || !movable || editingStyle != .delete }
}
