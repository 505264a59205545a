import DequeModule
import MemoryBudget
import Synchronization
import TablecastProtocol
import WebSocketTransport

/// The latest changes of each table this node holds, as committed here or followed from other nodes, so that
/// `history` is still answered while the store cannot be read (a PostgreSQL outage). Each change is kept as the
/// `update` message that was fanned out (the very buffer, not a copy) with its time and the name of its origin.
///
/// Only a page that memory holds entirely is answered: one reaching before the oldest change kept here would need
/// the store, and is left to it (`nil`, and the request stays `unavailable`).
///
/// The bytes it keeps count in the memory budget's update-history account; when that is over its share, the table
/// appending gives back its oldest changes, as a table's ``UpdateHistory`` does.
final class RecentChanges: Sendable {
    private struct Change {
        var version: UInt64
        var time: Int64
        var originName: String
        var originUser: String
        var update: WebSocketMessage
    }

    /// One table's latest changes, of one life of it, with no gap.
    private struct Table {
        var epoch: Int64
        var changes: Deque<Change> = []
        var bytes = 0
    }

    /// Most changes kept per table.
    let limit: Int
    /// Most bytes of `update` messages kept per table.
    let byteLimit: Int
    private let account: MemoryBudget.Account
    private let tables = Mutex<[String: Table]>([:])

    init(account: MemoryBudget.Account, limit: Int = 1_000, byteLimit: Int = 4 << 20) {
        self.account = account
        self.limit = limit
        self.byteLimit = byteLimit
    }

    deinit {
        account.release(tables.withLock { $0.values.reduce(0) { $0 + $1.bytes } })
    }

    /// Records the change that brought table `name` (of life `epoch`) to `version`. One that does not follow the
    /// latest kept (a reload, another life of the name) starts the table over.
    func append(
        _ name: String, epoch: Int64, version: UInt64, time: Int64, originName: String, originUser: String,
        update: WebSocketMessage
    ) {
        let change = Change(
            version: version, time: time, originName: originName, originUser: originUser, update: update)
        // In place (`default:` subscript): one lookup of the name, where taking the table out and putting it back
        // hashed it twice.
        tables.withLock { append(change, epoch: epoch, to: &$0[name, default: Table(epoch: epoch)]) }
    }

    private func append(_ change: Change, epoch: Int64, to table: inout Table) {
        if table.epoch != epoch || table.changes.last.map({ $0.version + 1 != change.version }) == true {
            account.release(table.bytes)
            table = Table(epoch: epoch)
        }
        table.changes.append(change)
        table.bytes += change.update.count
        account.charge(change.update.count)
        while !table.changes.isEmpty
            && (table.changes.count > limit || (table.bytes > byteLimit && table.changes.count > 1) || account.isOver)
        {
            let size = table.changes.removeFirst().update.count
            table.bytes -= size
            account.release(size)
        }
    }

    /// Forgets table `name` (dropped).
    func forget(_ name: String) {
        account.release(tables.withLock { $0.removeValue(forKey: name)?.bytes ?? 0 })
    }

    /// The `changes` page that `history` asks for, when memory holds all of it, for life `epoch` of table `name`;
    /// else nil. `oldest` is then the version before the oldest change kept here: what this node can show.
    func changes(
        _ name: String, epoch: Int64, from: UInt64?, to: UInt64?, limit: Int, newestFirst: Bool, ref: String?
    ) -> ServerMessage.Changes? {
        let kept = tables.withLock {
            tables -> (oldest: UInt64, last: UInt64, range: ClosedRange<UInt64>, page: [Change])? in
            guard let table = tables[name], table.epoch == epoch, let first = table.changes.first?.version,
                let last = table.changes.last?.version
            else { return nil }
            // The versions asked for, and the page of them: all of it must be here.
            let low = max(from ?? 1, 1)
            let high = min(to ?? last, last)
            guard low <= high else { return nil }
            let count = UInt64(max(limit, 1))
            let page =
                newestFirst
                ? (high + 1 > count ? max(low, high + 1 - count) : low)...high : low...min(high, low + count - 1)
            guard page.lowerBound >= first else { return nil }
            let offset = Int(page.lowerBound - first)
            return (first - 1, last, low...high, Array(table.changes[offset..<offset + page.count]))
        }
        guard let kept else { return nil }
        var entries: [ServerMessage.HistoryEntry] = []
        for change in kept.page {
            guard case .update(let update)? = try? ServerMessage.decode(change.update.withUnsafeBytes { Array($0) })
            else { return nil }
            entries.append(
                .init(
                    version: change.version, time: change.time, originClient: update.originClient,
                    originName: change.originName.isEmpty ? nil : change.originName, originRef: update.originRef,
                    batch: update.batch, originUser: change.originUser.isEmpty ? nil : change.originUser))
        }
        if newestFirst { entries.reverse() }
        // Where the range goes on past this page; never at or below `oldest`, which this node cannot show.
        let next = newestFirst ? entries.last!.version - 1 : entries.last!.version + 1
        let goesOn = kept.range.contains(next) && next > kept.oldest
        return .init(
            ref: ref, table: name, epoch: Epoch.text(epoch), version: kept.last, oldest: kept.oldest, entries: entries,
            next: goesOn ? next : nil)
    }
}
