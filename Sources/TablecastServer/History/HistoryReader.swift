import Dispatch
import Foundation
import MemoryBudget
import Synchronization
import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// Answers `history` and `snapshotAt` from connections of their own, on readers of their own: reading the log and
/// rebuilding a past table never waits for the committer, a table actor or the router, nor holds them up (a SQLite
/// database is in WAL mode, so its read-only connections read while the committer writes; PostgreSQL reads each
/// request in one read-only transaction).
///
/// Several readers share the work, and a ``HistoryReadQueue`` decides who goes next (cheapest payer first, paced by
/// cost, one reply at a time per connection), so that one client's flood of replays cannot delay another's reads.
/// Replies are counted in the memory budget's history-replies account until they are written; while it is over its
/// share, no new request starts. A `changes` page holds at most ``maxPageBytes`` of batches (`next` goes on).
final class HistoryReader: Sendable {
    /// One reader: a thread of its own, and the read-only store and parsed snapshots confined to it. The replay
    /// readers' threads run at a lower priority (nice 10) than everything else, so that a flood of replays gives
    /// way to commits, the fan-out and the light lane instead of competing with them for the cores.
    private final class Reader: @unchecked Sendable {
        /// The light lane: it takes only reads expected to be cheap (see ``HistoryReadQueue``).
        let isLight: Bool
        var store: (any TableStorage)?
        var snapshots = SnapshotCache<ParsedSnapshot>(capacity: 4)
        /// Work for the thread, in order; nil ends it.
        private let jobs = Mutex<[(@Sendable () -> Void)?]>([])
        private let ready = DispatchSemaphore(value: 0)
        /// Signalled when the thread has ended.
        let ended = DispatchSemaphore(value: 0)

        init(_ number: Int, light: Bool) {
            isLight = light
            let thread = Thread { [self] in
                // On Linux, PRIO_PROCESS with 0 names the calling thread only.
                if !light { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10) }
                defer { ended.signal() }
                while true {
                    ready.wait()
                    guard let job = jobs.withLock({ $0.removeFirst() }) else { return }
                    job()
                }
            }
            thread.name = light ? "tablecast-history-light" : "tablecast-history-\(number)"
            thread.start()
        }

        /// Runs `job` on the reader's thread, after what was queued before.
        func async(_ job: @escaping @Sendable () -> Void) {
            jobs.withLock { $0.append(job) }
            ready.signal()
        }

        /// Ends the thread once what was queued before is done.
        func stop() {
            jobs.withLock { $0.append(nil) }
            ready.signal()
        }
    }

    /// A table parsed from a stored snapshot, counted in the budget's snapshot account (at its JSON text's size, an
    /// estimate) while a reader keeps it.
    private struct ParsedSnapshot {
        var table: Table
        let charge: MemoryCharge
    }

    /// The encoded historical snapshots kept, and those a reader is encoding now (others wait for them).
    private struct SharedSnapshots {
        var cache = SnapshotCache<WebSocketMessage>(capacity: 4)
        var building: [SnapshotCache<WebSocketMessage>.Key: DispatchGroup] = [:]
    }

    /// A request waiting for a reader: what to answer, and where the answer goes.
    private struct Request: Sendable {
        var ref: String?
        var body:
            @Sendable (any TableStorage, inout SnapshotCache<ParsedSnapshot>) throws(ProtocolError) -> WebSocketMessage
        var answer: @Sendable (WebSocketMessage) -> Void
    }

    private struct State {
        var queue = HistoryReadQueue<Request>()
        var idle: [Reader]
        var wakeScheduled = false
        /// Set by ``stop()``: requests from then on are refused, never queued for readers that have ended.
        var stopped = false
    }

    /// The most bytes of batches one `changes` page carries; a page with more stops there and gives `next`.
    static let maxPageBytes = 2 << 20

    /// The SQLite file or the `postgresql://` URL.
    private let database: String
    private let limits: ProtocolLimits
    private let account: MemoryBudget.Account
    /// Where failures to read the store are logged, once per cause per interval.
    private let failures: FailureLog
    /// The encoded historical snapshots most recently asked for, shared by every reply at their version and counted
    /// in the budget's snapshot account while kept or queued.
    private let sharedSnapshots = Mutex(SharedSnapshots())
    private let snapshotAccount: MemoryBudget.Account
    private let state: Mutex<State>
    /// Every reader, to end their threads with the reader.
    private let readers: [Reader]
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    /// Opens `readers` read-only connections, and one more for the light lane, in the background (the server has
    /// created the file by now), so that the first requests do not wait for them; should one fail, its first request
    /// tries again and reports why. By default replays may keep all cores but one busy: the last is left to the
    /// tables, the fan-out and cheap reads.
    init(
        database: String, limits: ProtocolLimits, account: MemoryBudget.Account, snapshotAccount: MemoryBudget.Account,
        failures: FailureLog, readers: Int = max(1, ProcessInfo.processInfo.activeProcessorCount - 1)
    ) {
        self.failures = failures
        self.database = database
        self.limits = limits
        self.account = account
        self.snapshotAccount = snapshotAccount
        origin = clock.now
        let all = (0...max(1, readers)).map { Reader($0, light: $0 == 0) }
        state = Mutex(State(idle: all))
        self.readers = all
        for reader in all { reader.async { reader.store = try? Self.open(database) } }
    }

    /// The answer to `history` on `connection`: a `changes` page or an `error`, encoded and counted. When the store
    /// cannot be read, `orFromMemory` may answer instead (the changes a table holds, see ``RecentChanges``).
    func changes(
        _ table: String, from: UInt64?, to: UInt64?, limit: Int?, newestFirst: Bool, ref: String?,
        for connection: WebSocketConnectionID, principal: String,
        orFromMemory: @escaping @Sendable () -> ServerMessage.Changes? = { nil }
    ) async -> WebSocketMessage {
        let count = limit ?? limits.defaultHistoryEntries
        return await answer(ref: ref, table: table, connection: connection, principal: principal) {
            [self] store, _ throws(ProtocolError) in
            do throws(ProtocolError) {
                return Self.encoded(
                    try page(store, table, from: from, to: to, count: count, newestFirst: newestFirst, ref: ref))
            } catch {
                guard error.code == .unavailable, let held = orFromMemory() else { throw error }
                return Self.encoded(.changes(held))
            }
        }
    }

    /// A `changes` page read from `store`.
    private func page(
        _ store: any TableStorage, _ table: String, from: UInt64?, to: UInt64?, count: Int, newestFirst: Bool,
        ref: String?
    ) throws(ProtocolError) -> ServerMessage {
        if let from, let to, from > to {
            throw ProtocolError(.badRequest, "from (\(from)) is after to (\(to))", at: "history.from")
        }
        let page = try reading(table) {
            try store.history(
                table, from: Int64(clamping: from ?? 0), to: Int64(clamping: to ?? .max), limit: count + 1,
                byteLimit: Self.maxPageBytes, newestFirst: newestFirst)
        }
        let oldest = UInt64(page.oldest)
        for (key, version) in [("from", from), ("to", to)] {
            if let version, oldest > 0, version <= oldest {
                throw Self.pruned(table, oldest: oldest, asked: version, at: "history.\(key)")
            }
        }
        // The page ends at `count` entries or where its batches reach the byte bound, whichever comes first;
        // the store read one entry more, which says where the next page starts.
        var taken = 0
        var bytes = 0
        while taken < min(count, page.entries.count), bytes < Self.maxPageBytes {
            bytes += page.entries[taken].batch.utf8.count
            taken += 1
        }
        let entries = try page.entries.prefix(taken).map(Self.entry)
        return .changes(
            .init(
                ref: ref, table: table, epoch: Epoch.text(page.info.epoch), version: UInt64(page.info.version),
                oldest: oldest, entries: entries,
                next: page.entries.count > taken ? UInt64(page.entries[taken].version) : nil))
    }

    /// The answer to `snapshotAt` on `connection`: the table at `version` as a historical `snapshot`, or an `error`,
    /// encoded and counted. The snapshot is encoded once for every request of the table at that version (while it
    /// is among the few most recent, see ``sharedSnapshots``): each reply is its request's head and that buffer.
    func snapshot(
        _ table: String, at version: UInt64, ref: String?, for connection: WebSocketConnectionID, principal: String
    ) async -> WebSocketMessage {
        return await answer(ref: ref, table: table, connection: connection, principal: principal) {
            [self] store, snapshots throws(ProtocolError) in
            // The table's bounds first (no log read): a version asked for again is answered from its encoding.
            let bounds = try reading(table) { try store.history(table, from: 0, to: 0, limit: 0, newestFirst: false) }
            guard version <= UInt64(bounds.info.version) else {
                throw ProtocolError(
                    .outOfRange,
                    "table '\(table)' is at version \(bounds.info.version); version \(version) does not exist yet",
                    at: "snapshotAt.version")
            }
            guard version >= UInt64(bounds.oldest) else {
                throw Self.pruned(table, oldest: UInt64(bounds.oldest), asked: version, at: "snapshotAt.version")
            }
            let key = SnapshotCache<WebSocketMessage>.Key(
                table: table, epoch: bounds.info.epoch, version: Int64(version), rules: bounds.info.rules)
            // Another reader encoding this version now: wait for its encoding rather than make a second one.
            while true {
                let found = sharedSnapshots.withLock { shared -> (WebSocketMessage?, DispatchGroup?) in
                    if let encoding = shared.cache.value(key) { return (encoding, nil) }
                    if let building = shared.building[key] { return (nil, building) }
                    let building = DispatchGroup()
                    building.enter()
                    shared.building[key] = building
                    return (nil, nil)
                }
                if let encoding = found.0 { return Self.reply(ref: ref, epoch: bounds.info.epoch, sharing: encoding) }
                guard let building = found.1 else { break }
                building.wait()
            }
            // This reader encodes it; whatever happens, the waiting ones go on (and encode it themselves on a failure).
            defer {
                sharedSnapshots.withLock { $0.building.removeValue(forKey: key) }?.leave()
            }
            let state = try reading(table) { try store.state(table, at: Int64(clamping: version)) }
            guard let snapshot = state.snapshot else {
                throw Self.pruned(table, oldest: UInt64(state.oldest), asked: version, at: "snapshotAt.version")
            }
            let rebuilt: Table
            do {
                let parsedKey = SnapshotCache<ParsedSnapshot>.Key(
                    table: table, epoch: state.info.epoch, version: snapshot.version)
                var past: Table
                if let parsed = snapshots.value(parsedKey) {
                    past = parsed.table
                } else {
                    past = try Table(json: JSONValue(parsing: snapshot.body))
                    snapshots.insert(
                        ParsedSnapshot(
                            table: past, charge: MemoryCharge(snapshot.body.utf8.count, to: snapshotAccount)),
                        for: parsedKey)
                }
                for entry in state.log { try past.apply(Batch(json: JSONValue(parsing: entry.batch))) }
                past.rules = try TableRules(json: JSONValue(parsing: state.info.rules))
                rebuilt = past
            } catch {
                throw ProtocolError(.internal, "table '\(table)' could not be rebuilt at version \(version): \(error)")
            }
            let encoding = WebSocketMessage(
                kind: .text,
                bytes: HistoricalSnapshotEncoding(
                    table: table, version: rebuilt.version, epoch: Epoch.text(state.info.epoch), rules: rebuilt.rules,
                    sections: rebuilt.sections
                ).shared)
            encoding.charge(to: snapshotAccount)
            sharedSnapshots.withLock { $0.cache.insert(encoding, for: key) }
            return Self.reply(ref: ref, epoch: state.info.epoch, sharing: encoding)
        }
    }

    /// A historical snapshot's reply to `ref`: its head, then the shared encoding.
    private static func reply(ref: String?, epoch: Int64, sharing encoding: WebSocketMessage) -> WebSocketMessage {
        // The head depends on the epoch and the ref only; the encoding's members follow it.
        let head = HistoricalSnapshotEncoding.head(epoch: Epoch.text(epoch), ref: ref)
        return WebSocketMessage(kind: .text, head: head, sharing: encoding)
    }

    private static func encoded(_ message: ServerMessage) -> WebSocketMessage {
        WebSocketMessage(kind: .text, bytes: message.encoded)
    }

    deinit {
        for reader in readers { reader.stop() }
    }

    /// Ends the reader threads once the requests they took are answered; returns when they have ended.
    func stop() async {
        // Under the lock that `dispatch()` hands requests over in: every request taken before is queued on its
        // reader ahead of the reader's end, and none is taken after.
        let readers = readers
        let waiting = state.withLock { state in
            state.stopped = true
            for reader in readers { reader.stop() }
            return state.queue.removeAll()
        }
        for request in waiting { request.answer(Self.shuttingDown(request.ref)) }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Waiting blocks: not on the cooperative pool.
            Thread {
                for reader in readers { reader.ended.wait() }
                done.resume()
            }.start()
        }
    }

    /// `connection` closed: what it still has waiting is dropped, and its callers answered with a refusal nobody
    /// will read (each waits for an answer: a dropped request must not leave its task suspended).
    func forget(_ connection: WebSocketConnectionID) {
        for request in state.withLock({ $0.queue.remove(connection) }) {
            request.answer(Self.encoded(.error(ProtocolError(.unavailable, "the connection closed", ref: request.ref))))
        }
    }

    /// Queues `body` for a reader and returns its answer (a refusal becomes an `error` answering `ref`), encoded
    /// and charged to the history-replies account until it is written.
    private func answer(
        ref: String?, table: String, connection: WebSocketConnectionID, principal: String,
        _ body:
            @escaping @Sendable (any TableStorage, inout SnapshotCache<ParsedSnapshot>) throws(ProtocolError) ->
            WebSocketMessage
    ) async -> WebSocketMessage {
        await withCheckedContinuation { continuation in
            let request = Request(ref: ref, body: body) { continuation.resume(returning: $0) }
            // A request made after the readers stopped (by a task the router started just before) is refused: queued,
            // it would wait for good, and so would the shutdown, which waits for every task.
            let queued = state.withLock { state in
                guard !state.stopped else { return false }
                state.queue.add(request, table: table, connection: connection, principal: principal)
                return true
            }
            guard queued else { return request.answer(Self.shuttingDown(ref)) }
            dispatch()
        }
    }

    private static func shuttingDown(_ ref: String?) -> WebSocketMessage {
        encoded(.error(ProtocolError(.unavailable, "the server is shutting down", ref: ref)))
    }

    private var now: Double {
        (clock.now - origin) / .seconds(1)
    }

    /// Hands waiting requests to idle readers while the reply account has room; when only paced requests wait, looks
    /// again once the first may go.
    private func dispatch() {
        while true {
            let now = now
            let handed: Bool
            let wake: Double?
            (handed, wake) = state.withLock { state in
                guard !state.stopped else { return (false, nil) }
                if !account.isOver {
                    for (index, reader) in state.idle.enumerated() {
                        guard let taken = state.queue.next(now: now, lightOnly: reader.isLight) else { continue }
                        state.idle.remove(at: index)
                        // Handed over under the lock, so that `stop()` cannot end the reader before it has it.
                        reader.async { [self] in
                            run(
                                taken.request, on: reader, table: taken.table, connection: taken.connection,
                                principal: taken.principal)
                        }
                        return (true, nil)
                    }
                }
                let wake = state.wakeScheduled ? nil : state.queue.wakeTime(now: now)
                if wake != nil { state.wakeScheduled = true }
                return (false, wake)
            }
            if let wake {
                failures.tasks.spawn { [self] in
                    guard (try? await Task.sleep(for: .seconds(max(0.001, wake - now)))) != nil else { return }
                    state.withLock { $0.wakeScheduled = false }
                    dispatch()
                }
            }
            guard handed else { return }
        }
    }

    /// Answers `request` on `reader`'s thread, then frees the reader and looks for more work.
    private func run(
        _ request: Request, on reader: Reader, table: String, connection: WebSocketConnectionID, principal: String
    ) {
        let started = now
        let encoded: WebSocketMessage
        do throws(ProtocolError) {
            if reader.store == nil { reader.store = try reading(nil) { try Self.open(database) } }
            encoded = try request.body(reader.store!, &reader.snapshots)
        } catch {
            var refusal = error
            refusal.ref = request.ref
            encoded = Self.encoded(.error(refusal))
        }
        let finished = now
        state.withLock { state in
            state.queue.finished(
                table: table, connection: connection, principal: principal, seconds: finished - started, now: finished)
            state.idle.append(reader)
        }
        encoded.charge(to: account) { [self] in
            state.withLock { $0.queue.replyWritten(connection) }
            dispatch()
        }
        request.answer(encoded)
        dispatch()
    }

    private static func open(_ database: String) throws -> any TableStorage {
        var options = TableStoreOptions()
        options.readOnly = true
        options.checkIntegrityOnOpen = false
        return try openStore(StoreLocation(database), options: options)
    }

    /// Runs a store read, turning its failures into wire errors.
    private func reading<T>(_ table: String?, _ body: () throws -> T) throws(ProtocolError) -> T {
        do {
            return try body()
        } catch let error as StoreError where error.kind == .noSuchTable {
            throw ProtocolError(.noSuchTable, "no table '\(table ?? "")'")
        } catch {
            throw ProtocolError.unavailable(
                "the history could not be read", error,
                incident: failures.log(
                    .error, "the history could not be read", cause: ProtocolError.reason(error),
                    metadata: ["table": "\(table ?? "")", "error": "\(error)"]))
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
            originName: entry.originName.isEmpty ? nil : entry.originName, originRef: entry.originRef, batch: batch,
            originUser: entry.originUser.isEmpty ? nil : entry.originUser)
    }
}
