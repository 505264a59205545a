import Dispatch
import Foundation
import Logging
import Synchronization
import TableModel
import TableStore
import TablecastProtocol

/// Presence across the nodes of a shared store: each table actor hands over its local presence whenever it
/// changes, and this writes it to PostgreSQL on a queue of its own (latest state per table, coalesced), sends a
/// heartbeat every second and clears the presence of nodes silent for ``deadAfter``. Tables read the other nodes'
/// presence when the follower reports a change, and show it after their own.
final class ClusterPresence: Sendable {
    /// A node not heard from for this long is taken for dead and its presence is cleared.
    static let deadAfter = Duration.seconds(3)
    static let heartbeatInterval = DispatchTimeInterval.seconds(1)

    /// One node's presence on a table: who is listed, and how many only count (`viewers`).
    struct Share: Equatable, Sendable {
        var clients: [PresenceEntry] = []
        var viewers = 0

        var isEmpty: Bool { clients.isEmpty && viewers == 0 }
    }

    /// This node's id in the presence tables.
    let node = UUID().uuidString.lowercased()
    private let queue = DispatchQueue(label: "tablecast-presence")
    /// Used on `queue` only.
    private let store: Mutex<PostgresPresence>
    /// Whether the last call to the store was answered. While it was not, reads answer "nobody elsewhere" at once
    /// instead of queueing behind calls that may each wait out a connection timeout.
    private let reachable = Atomic(true)
    /// The last read of ``subscribersElsewhere()``; used on `queue` only.
    private let countsRead = Mutex<(at: ContinuousClock.Instant, counts: [String: Int])?>(nil)
    /// How long one read of the other nodes' counts answers for.
    private let countsLifetime: Duration
    /// Local presence per table not written yet; nil means nobody.
    private let outgoing = Mutex<[String: Share?]>([:])
    /// Beats on `queue`; in a `Mutex` only because timers are not `Sendable`.
    private let timer: Mutex<any DispatchSourceTimer>
    /// Heartbeats fail every second while the store is down: logged once per cause per interval.
    private let failures: FailureLog

    /// - Parameter countsLifetime: How long one read of the other nodes' subscriber counts answers every
    ///   ``subscribersElsewhere()``; by default as long as the nodes take to share a change (coalesced 100 ms).
    init(url: String, logger: Logger, tasks: ServerTasks, countsLifetime: Duration = .milliseconds(100)) {
        self.countsLifetime = countsLifetime
        store = Mutex(PostgresPresence(url: url))
        failures = FailureLog(logger: logger, tasks: tasks)
        timer = Mutex(DispatchSource.makeTimerSource(queue: queue))
        timer.withLock { timer in
            timer.schedule(deadline: .now(), repeating: Self.heartbeatInterval)
            timer.setEventHandler { [self] in
                do {
                    try noting { try store.withLock { try $0.heartbeat(node: node, timeout: Self.deadAfter) } }
                } catch {
                    failures.log(
                        .warning, "presence heartbeat failed", cause: ProtocolError.reason(error),
                        metadata: ["error": "\(error)"])
                }
            }
            timer.resume()
        }
    }

    /// This node's presence on `table` changed to `share`.
    func publish(table: String, _ share: Share) {
        let first = outgoing.withLock { outgoing in
            defer { outgoing[table] = share.isEmpty ? .some(nil) : share }
            return outgoing.isEmpty
        }
        if first { queue.async { [self] in flush() } }
    }

    /// The other nodes' presence on `table`: their listed clients in a stable order, and their viewers summed.
    func others(on table: String) async -> Share {
        guard reachable.load(ordering: .relaxed) else { return Share() }
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                let texts = (try? noting { try store.withLock { try $0.others(on: table, excluding: node) } }) ?? []
                let shares = texts.map(Self.decode)
                continuation.resume(
                    returning: Share(clients: shares.flatMap(\.clients), viewers: shares.reduce(0) { $0 + $1.viewers }))
            }
        }
    }

    /// How many subscribe to each table on the other nodes (listed clients and viewers), as they last shared it;
    /// empty when the store cannot be read. Read at most once per `countsLifetime` however many ask (each
    /// `listTables` does), so that asking cannot crowd out the heartbeat on `queue`.
    func subscribersElsewhere() async -> [String: Int] {
        guard reachable.load(ordering: .relaxed) else { return [:] }
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                if let (at, counts) = countsRead.withLock({ $0 }), at.duration(to: .now) < countsLifetime {
                    return continuation.resume(returning: counts)
                }
                let rows = (try? noting { try store.withLock { try $0.othersOnEveryTable(excluding: node) } }) ?? []
                var counts: [String: Int] = [:]
                for (table, text) in rows {
                    let share = Self.decode(text)
                    counts[table, default: 0] += share.clients.count + share.viewers
                }
                countsRead.withLock { $0 = (.now, counts) }
                continuation.resume(returning: counts)
            }
        }
    }

    /// Stops the heartbeat and removes this node's presence everywhere.
    func stop() {
        timer.withLock { $0.cancel() }
        queue.sync {
            flush()
            try? noting { try store.withLock { try $0.leave(node: node) } }
        }
    }

    /// Runs `attempt` (a call to the store, on `queue`), noting whether it was answered.
    private func noting<T>(_ attempt: () throws -> T) throws -> T {
        do {
            let result = try attempt()
            reachable.store(true, ordering: .relaxed)
            return result
        } catch {
            reachable.store(false, ordering: .relaxed)
            throw error
        }
    }

    private func flush() {
        let batch = outgoing.withLock { outgoing in
            defer { outgoing.removeAll() }
            return outgoing
        }
        for (table, share) in batch {
            do {
                try noting {
                    try store.withLock {
                        try $0.publish(
                            node: node, table: table, clients: share.map { Self.encode($0, node: node).jsonText })
                    }
                }
            } catch {
                failures.log(
                    .warning, "could not share presence", cause: ProtocolError.reason(error),
                    metadata: ["table": "\(table)", "error": "\(error)"])
            }
        }
    }

    /// `{"clients": [...], "viewers": n}`. Presence keys are unique per node only, so each is shared prefixed
    /// with the node's id.
    static func encode(_ share: Share, node: String) -> JSONValue {
        let clients = JSONValue.array(
            share.clients.map { entry in
                var object: [String: JSONValue] = [
                    "key": .string("\(node.prefix(8))-\(entry.key)"), "client": .string(entry.client),
                    "name": .string(entry.name), "editing": .bool(entry.editing),
                ]
                object["row"] = entry.row.map(JSONValue.string)
                object["user"] = entry.user.map(JSONValue.string)
                return .object(object)
            })
        return .object(["clients": clients, "viewers": .number(Double(share.viewers))])
    }

    /// What ``encode(_:node:)`` made; a bare array of clients (as nodes before viewers were shared wrote it)
    /// counts no viewers.
    static func decode(_ text: String) -> Share {
        let value = try? JSONValue(parsing: text)
        var viewers = 0
        var list = value
        if case .object(let object)? = value {
            list = object["clients"]
            if case .number(let count)? = object["viewers"] { viewers = Int(count) }
        }
        guard case .array(let items)? = list else { return Share(viewers: viewers) }
        let clients = items.compactMap { item -> PresenceEntry? in
            guard case .object(let object) = item, case .string(let key)? = object["key"],
                case .string(let client)? = object["client"],
                case .string(let name)? = object["name"], case .bool(let editing)? = object["editing"]
            else { return nil }
            let row: String? = if case .string(let row)? = object["row"] { row } else { nil }
            let user: String? = if case .string(let user)? = object["user"] { user } else { nil }
            return PresenceEntry(key: key, client: client, name: name, editing: editing, row: row, user: user)
        }
        return Share(clients: clients, viewers: viewers)
    }
}
