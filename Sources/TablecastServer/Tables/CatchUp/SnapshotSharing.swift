import TableModel
import WebSocketTransport

/// What one table keeps for the catch-ups that need a snapshot (a subscribe without `since`, or one too far
/// behind): the newest snapshot built, shared by every such catch-up with the updates committed after it while
/// those fit the catch-up bound, the catch-ups waiting for one, and whether one is being built. A value the table
/// actor drives: it builds the snapshot on another task, sends, and reports here what happened.
struct SnapshotSharing {
    /// A catch-up waiting for a snapshot.
    struct Waiter {
        var requester: Requester
        var ref: String?
        /// A subscribe (true) or a refresh.
        var subscribing: Bool
    }

    /// An encoded `snapshot` of the committed table.
    struct Snapshot {
        var version: UInt64
        var rules: TableRules
        var message: WebSocketMessage
    }

    /// The newest snapshot built, shared by catch-ups until it expires or the table's state is replaced.
    private(set) var shared: Snapshot?
    /// Catch-ups waiting for the next snapshot.
    private(set) var waiters: [Waiter] = []
    /// A snapshot is being built (or its build waits for memory): no other starts.
    private(set) var isBuilding = false

    /// The shared snapshot followed by the updates after it, for a table at `version` with `rules`: when the rules
    /// are the snapshot's and those updates are all in `history` and within `limit`; nil when a newer snapshot is
    /// needed.
    func catchUp(
        version: UInt64, rules: TableRules, history: UpdateHistory, limit: ServerContext.CatchUpLimit
    ) -> [WebSocketMessage]? {
        guard let shared, shared.rules == rules, version - shared.version <= UInt64(limit.messages),
            let missed = history.messages(after: shared.version), missed.reduce(0, { $0 + $1.count }) <= limit.bytes
        else { return nil }
        return [shared.message] + missed
    }

    /// Queues `waiter` for the next snapshot; true when the caller should start building one.
    mutating func wait(_ waiter: Waiter) -> Bool {
        waiters.append(waiter)
        return startBuilding()
    }

    /// Queues `waiter` again (a newer snapshot than the one just built is needed); see ``startBuilding()``.
    mutating func requeue(_ waiter: Waiter) {
        waiters.append(waiter)
    }

    /// True, marking a build under way, when catch-ups wait and no build is under way: the caller builds one.
    mutating func startBuilding() -> Bool {
        guard !isBuilding, !waiters.isEmpty else { return false }
        isBuilding = true
        return true
    }

    /// The build the caller postponed (memory was short) may be tried again: see ``startBuilding()``.
    mutating func retryBuilding() -> Bool {
        isBuilding = false
        return startBuilding()
    }

    /// `snapshot` was built: it becomes the shared one. Returns the waiters, whom the caller serves with
    /// ``catchUp(version:rules:history:limit:)`` or queues again.
    mutating func built(_ snapshot: Snapshot) -> [Waiter] {
        isBuilding = false
        shared = snapshot
        defer { waiters = [] }
        return waiters
    }

    /// `snapshot` becomes the shared one without a build (the table sent it to its subscribers already).
    mutating func share(_ snapshot: Snapshot) {
        shared = snapshot
    }

    /// The shared snapshot of `version` has been kept long enough: let go of it, unless a newer one replaced it.
    mutating func expire(version: UInt64) {
        if shared?.version == version { shared = nil }
    }

    /// The table's state was replaced (rebased or reloaded): no snapshot of the old one is shared any more.
    mutating func forget() {
        shared = nil
    }

    /// `connection` unsubscribed: its waiting subscribe is dropped.
    mutating func cancelSubscribe(of connection: WebSocketConnectionID) {
        waiters.removeAll { $0.requester.connection == connection && $0.subscribing }
    }
}
