import Synchronization

/// The unstructured tasks the server starts: table drains, timers (snapshot expiry, presence, retries), requests
/// run beside a connection, failure summaries. Each is held while it runs, so that shutdown can cancel what is
/// left (timers end early; work that was asked for finishes) and wait for every one of them: nothing the server
/// started outlives it.
final class ServerTasks: Sendable {
    private struct State {
        var next: UInt64 = 0
        var running: [UInt64: Task<Void, Never>] = [:]
        /// Set by ``cancelAll()``: a task spawned later is cancelled at once.
        var cancelled = false
    }

    private let state = Mutex(State())

    init() {}

    /// Runs `body` as a task of its own, held until it ends.
    func spawn(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            let id = state.next
            state.next += 1
            let task = Task {
                await body()
                self.finished(id)
            }
            if state.cancelled { task.cancel() }
            state.running[id] = task
        }
    }

    private func finished(_ id: UInt64) {
        _ = state.withLock { $0.running.removeValue(forKey: id) }
    }

    /// Tasks running now.
    var count: Int { state.withLock { $0.running.count } }

    /// Cancels every task, and those spawned from now on, and returns once all of them have ended.
    func cancelAll() async {
        let tasks = state.withLock { state in
            state.cancelled = true
            return Array(state.running.values)
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        // Tasks that the ones above spawned while ending.
        while let task = state.withLock({ $0.running.values.first }) { await task.value }
    }
}
