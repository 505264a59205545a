import Dispatch
import TableModel
import TableStore
import TablecastProtocol

/// Answers `history` and `snapshotAt` from a connection of its own, on a queue of its own: reading the log and
/// rebuilding a past table never waits for the committer, a table actor or the router, nor holds them up (a SQLite
/// database is in WAL mode, so its read-only connection reads while the committer writes; PostgreSQL reads each
/// request in one read-only transaction).
final class HistoryReader: Sendable {
    /// The read-only store and the parsed snapshots, confined to `queue`.
    private final class StoreBox: @unchecked Sendable {
        var store: (any TableStorage)?
        var snapshots = SnapshotCache(capacity: 4)
    }

    /// The SQLite file or the `postgresql://` URL.
    private let database: String
    private let limits: ProtocolLimits
    private let queue = DispatchQueue(label: "tablecast-history")
    private let box = StoreBox()

    /// Opens the read-only connection in the background (the server has created the file by now), so that the
    /// first request does not wait for it; should that fail, the first request tries again and reports why.
    init(database: String, limits: ProtocolLimits) {
        self.database = database
        self.limits = limits
        let box = box
        queue.async { box.store = try? Self.open(database) }
    }

    /// The answer to `history`: a `changes` page or an `error`.
    func changes(
        _ table: String, from: UInt64?, to: UInt64?, limit: Int?, newestFirst: Bool, ref: String?
    ) async -> ServerMessage {
        let count = limit ?? limits.defaultHistoryEntries
        return await answer(ref: ref) { store, _ throws(ProtocolError) in
            if let from, let to, from > to {
                throw ProtocolError(.badRequest, "from (\(from)) is after to (\(to))", at: "history.from")
            }
            let page = try Self.reading(table) {
                try store.history(
                    table, from: Int64(clamping: from ?? 0), to: Int64(clamping: to ?? .max), limit: count + 1,
                    newestFirst: newestFirst)
            }
            let oldest = UInt64(page.oldest)
            for (key, version) in [("from", from), ("to", to)] {
                if let version, oldest > 0, version <= oldest {
                    throw Self.pruned(table, oldest: oldest, asked: version, at: "history.\(key)")
                }
            }
            let entries = try page.entries.prefix(count).map(Self.entry)
            return .changes(
                .init(
                    ref: ref, table: table, epoch: Epoch.text(page.info.epoch), version: UInt64(page.info.version),
                    oldest: oldest, entries: entries, next: page.entries.count > count ? UInt64(page.entries[count].version) : nil))
        }
    }

    /// The answer to `snapshotAt`: the table at `version` as a historical `snapshot`, or an `error`.
    func snapshot(_ table: String, at version: UInt64, ref: String?) async -> ServerMessage {
        await answer(ref: ref) { store, snapshots throws(ProtocolError) in
            let state = try Self.reading(table) { try store.state(table, at: Int64(clamping: version)) }
            guard version <= UInt64(state.info.version) else {
                throw ProtocolError(
                    .outOfRange, "table '\(table)' is at version \(state.info.version); version \(version) does not exist yet",
                    at: "snapshotAt.version")
            }
            guard let snapshot = state.snapshot else {
                throw Self.pruned(table, oldest: UInt64(state.oldest), asked: version, at: "snapshotAt.version")
            }
            let rebuilt: Table
            do {
                let key = SnapshotCache.Key(table: table, epoch: state.info.epoch, version: snapshot.version)
                var past: Table
                if let parsed = snapshots.table(key) {
                    past = parsed
                } else {
                    past = try Table(json: JSONValue(parsing: snapshot.body))
                    snapshots.insert(past, for: key)
                }
                for entry in state.log { try past.apply(Batch(json: JSONValue(parsing: entry.batch))) }
                past.rules = try TableRules(json: JSONValue(parsing: state.info.rules))
                rebuilt = past
            } catch {
                throw ProtocolError(.internal, "table '\(table)' could not be rebuilt at version \(version): \(error)")
            }
            return .historicalSnapshot(
                ref: ref, table: table, version: rebuilt.version, epoch: Epoch.text(state.info.epoch), rules: rebuilt.rules,
                sections: rebuilt.sections)
        }
    }

    /// Runs `body` with the store on the queue; a refusal becomes an `error` answering `ref`.
    private func answer(
        ref: String?, _ body: @escaping @Sendable (any TableStorage, inout SnapshotCache) throws(ProtocolError) -> ServerMessage
    ) async -> ServerMessage {
        let (box, database) = (box, database)
        return await withCheckedContinuation { continuation in
            queue.async {
                var message: ServerMessage
                do throws(ProtocolError) {
                    if box.store == nil { box.store = try Self.reading(nil) { try Self.open(database) } }
                    message = try body(box.store!, &box.snapshots)
                } catch {
                    var refusal = error
                    refusal.ref = ref
                    message = .error(refusal)
                }
                continuation.resume(returning: message)
            }
        }
    }

    private static func open(_ database: String) throws -> any TableStorage {
        if database.hasPrefix("postgresql://") || database.hasPrefix("postgres://") {
            return try PostgresTableStore(url: database)
        }
        var options = TableStoreOptions()
        options.readOnly = true
        options.checkIntegrityOnOpen = false
        return try TableStore(path: database, options: options)
    }

    /// Runs a store read, turning its failures into wire errors.
    private static func reading<T>(_ table: String?, _ body: () throws -> T) throws(ProtocolError) -> T {
        do {
            return try body()
        } catch let error as StoreError where error.kind == .noSuchTable {
            throw ProtocolError(.noSuchTable, "no table '\(table ?? "")'")
        } catch {
            throw ProtocolError.unavailable("the history could not be read", error)
        }
    }

    static func pruned(_ table: String, oldest: UInt64, asked version: UInt64, at: String) -> ProtocolError {
        ProtocolError(
            .pruned,
            "table '\(table)' keeps its history from version \(oldest) on (the table at \(oldest) and every change "
                + "after it); version \(version) was pruned", at: at)
    }

    private static func entry(_ entry: LogEntry) throws(ProtocolError) -> ServerMessage.HistoryEntry {
        let batch: Batch
        do {
            batch = try Batch(json: JSONValue(parsing: entry.batch))
        } catch {
            throw ProtocolError(.internal, "version \(entry.version) of the log could not be read: \(error)")
        }
        return .init(
            version: UInt64(entry.version), time: entry.time, originClient: entry.originClient,
            originName: entry.originName.isEmpty ? nil : entry.originName, originRef: entry.originRef, batch: batch)
    }
}
