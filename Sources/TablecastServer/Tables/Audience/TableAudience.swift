import TableModel
import TablecastProtocol
import WebSocketTransport

/// Who is on a table here and what they see of one another: the subscribed connections, the presence board and
/// when its news go out, and what this node shares of it with other nodes. Owned by the table's actor, and used
/// only on it.
final class TableAudience {
    /// Who a presence entry is: a connection to this node, or an entry another node shares (by its key).
    enum Member: Hashable, Sendable {
        case local(WebSocketConnectionID)
        case remote(String)
    }

    /// The shortest time between two `presence` messages of a table: 100 ms, and longer on a table with more than
    /// 2,000 subscribers, so that its deltas cost at most ``presenceDeliveriesPerSecond`` (0.5 s at 10,000). Each
    /// delta goes to every subscriber: at 100 ms, a table of 10,000 where people come and go would send 100,000
    /// a second, about one core's worth.
    static func presenceInterval(subscribers: Int) -> Duration {
        max(.milliseconds(100), .seconds(1) * subscribers / presenceDeliveriesPerSecond)
    }

    static let presenceDeliveriesPerSecond = 20_000

    private let table: String
    private let context: ServerContext
    private(set) var subscribers = SubscriberList()
    /// Subscribers have the board's published state; its news go out as one `presence` delta per burst of work,
    /// and at most one per ``presenceInterval(subscribers:)``.
    private var presence = PresenceBoard<Member>()
    private var pacer = PresencePacer<ContinuousClock.Instant>()
    /// Shared stores: who is on the table on the other nodes (on the board as `.remote` members), and what this
    /// node last shared of its own.
    private var otherNodes = OtherNodesPresence()
    private var shared = ClusterPresence.Share()

    init(table: String, context: ServerContext) {
        self.table = table
        self.context = context
    }

    var isEmpty: Bool { subscribers.isEmpty }
    var hasNews: Bool { presence.hasNews }

    /// Sends `message` to every subscriber.
    func send(_ message: ServerMessage) {
        context.send(message, to: subscribers.ids)
    }

    /// Sends committed updates, in order, to every subscriber: as one transport command, so that each
    /// connection's queue has them all before its next write, which then carries them in one send (a group of
    /// updates costs a subscriber one system call, not one each).
    func deliver(_ updates: [WebSocketMessage]) {
        guard !subscribers.isEmpty, !updates.isEmpty else { return }
        context.transport.send(updates, to: subscribers.ids)
        context.metrics.deliveries.increment(by: Int64(subscribers.count * updates.count))
    }

    /// Subscribes `requester`'s connection and puts it on the board.
    func join(_ requester: Requester) {
        if subscribers.insert(requester.connection) { context.metrics.subscribers.increment() }
        presence.join(
            .local(requester.connection), key: requester.presenceKey, client: requester.client, name: requester.name,
            user: requester.user)
    }

    /// Ends `connection`'s subscription and its presence; false when it did not subscribe.
    @discardableResult
    func leave(_ connection: WebSocketConnectionID) -> Bool {
        let removed = subscribers.remove(connection)
        if removed { context.metrics.subscribers.decrement() }
        presence.leave(.local(connection))
        return removed
    }

    /// The table is gone: subscribers are told, and nobody is on it any more.
    func dismissAll() {
        send(.dropped(table: table))
        context.metrics.subscribers.decrement(by: Double(subscribers.count))
        subscribers.removeAll()
        presence = PresenceBoard()
        otherNodes = OtherNodesPresence()
    }

    /// A presence message of `requester`'s; only a subscriber has presence.
    func change(_ requester: Requester, _ change: TableWork.PresenceChange) throws(ProtocolError) {
        let member = Member.local(requester.connection)
        guard presence.contains(member) else {
            throw ProtocolError(.badRequest, "presence on table '\(table)' needs a subscription to it first")
        }
        switch change {
        case .editing(let on): presence.setEditing(member, on)
        case .beginEditingRow(let row): presence.beginEditingRow(member, row: row)
        case .endEditingRow(let row): presence.endEditingRow(member, row: row)
        }
    }

    /// `requester`'s connection shows its name and user from now on (a refreshed token named it anew).
    func rename(_ requester: Requester) {
        presence.rename(.local(requester.connection), name: requester.name, user: requester.user)
    }

    /// The rows someone is editing that `batch` deletes from `table`, alone or with their section.
    func editedRows(deletedBy batch: Batch, from table: Table) -> [String] {
        guard presence.anyRowEdited else { return [] }
        var ids = batch.deleteRows.compactMap { table.row(at: $0)?.id }
        for index in batch.deleteSections where table.sections.indices.contains(index) {
            ids += table.sections[index].rows.map(\.id)
        }
        return ids.filter(presence.isEdited)
    }

    /// Rows deleted: nobody edits them any more.
    func clear(rows: [String]) {
        for row in rows { presence.clearRow(row) }
    }

    /// The board's published state, as `subscribed` and `refreshed` carry it.
    func publishedStateJSON() -> [UInt8] { presence.publishedStateJSON() }

    /// Sends the presence delta now, or says how long to wait until the interval since the last one is over
    /// (then call ``presenceDue()`` and this again: whatever changed meanwhile goes out together).
    func broadcastWhenDue() -> Duration? {
        let now = ContinuousClock.now
        switch pacer.news(at: now, interval: Self.presenceInterval(subscribers: subscribers.count)) {
        case .waiting: return nil
        case .wait(let delay): return delay
        case .sendNow: break
        }
        if let cluster = context.clusterPresence {
            let local = ClusterPresence.Share(
                clients: presence.listed { if case .local = $0 { true } else { false } },
                viewers: presence.ownViewerCount)
            if local != shared {
                shared = local
                cluster.publish(table: table, local)
            }
        }
        if let delta = presence.takeDelta(table: table) {
            pacer.sent(at: now)
            send(.presence(delta))
        }
        return nil
    }

    /// The wait ``broadcastWhenDue()`` asked for is over.
    func presenceDue() { pacer.woke() }

    /// Reads the other nodes' presence on the table and brings their entries on the board in line with it;
    /// subscribers hear of a change with the next delta.
    nonisolated(nonsending) func followOtherNodes() async {
        guard let cluster = context.clusterPresence else { return }
        otherNodes.show(await cluster.others(on: table), on: &presence, as: Member.remote)
    }
}
