import Synchronization
import TablecastClient

/// The subscribers of a run with `--stage` or `--churn`: connections opened and closed to follow the plan's count
/// at a bounded pace (at most `handshakes` connecting at once, at most `connectRate` new ones a second), and churned
/// (`churn` a second leave: in turn a clean close, an abrupt one without a close frame, and a drop that resumes).
final class LoadSubscribers: Sendable {
    /// Makes the subscriber of a slot (each new connection takes the next slot) and names the table it subscribes
    /// to; the client must pass each of its events to `onEvent`.
    typealias Factory =
        @Sendable (_ slot: Int, _ onEvent: @escaping @Sendable (TablecastClient.Event) -> Void) throws -> (
            TablecastClient, String
        )

    private struct Member: Sendable {
        let slot: Int
        let client: TablecastClient
        let table: String
    }

    /// A churned subscriber that dropped its connection: when its new connection began (uptime ns), and whether
    /// it caught up with a snapshot rather than the updates it missed.
    private struct Resume {
        var reconnectedAt: UInt64?
        var snapshot = false
    }

    private struct State {
        var live: [Member] = []
        var opening = 0
        var nextSlot = 0
        var resuming: [Int: Resume] = [:]
        var churned = 0
        /// Opens the pace still allows now (a token bucket of `connectRate` a second, holding at most `handshakes`).
        var tokens = 0.0
    }

    private let state = Mutex(State())
    private let make: Factory
    private let stats: LoadStats
    private let handshakes: Int
    private let connectRate: Double
    private let churn: Double
    private let timeout: Duration

    init(
        stats: LoadStats, handshakes: Int, connectRate: Double, churn: Double, timeout: Duration,
        make: @escaping Factory
    ) {
        self.stats = stats
        self.handshakes = handshakes
        self.connectRate = connectRate
        self.churn = churn
        self.timeout = timeout
        self.make = make
    }

    /// The subscribers connected and subscribed now, with their tables.
    var members: [(client: TablecastClient, table: String)] {
        state.withLock { $0.live.map { ($0.client, $0.table) } }
    }

    var count: Int { state.withLock { $0.live.count } }

    /// Opens subscribers until `target` are subscribed, at the bounded pace (no churn): the run's start. Stops
    /// early when some failed to subscribe (the report counts them).
    func fill(to target: Int) async {
        let failed = stats.subscribeFailures.load(ordering: .relaxed)
        await withDiscardingTaskGroup { group in
            var last = ContinuousClock.now
            while true {
                let (live, opening) = state.withLock { ($0.live.count, $0.opening) }
                if opening == 0, live >= target || stats.subscribeFailures.load(ordering: .relaxed) > failed { break }
                let now = ContinuousClock.now
                step(target: target, elapsed: now - last, group: &group)
                last = now
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Follows `plan` from `start` (its t = 0) to its end: opens, closes and churns subscribers every 10 ms.
    func follow(_ plan: LoadPlan, from start: ContinuousClock.Instant) async {
        let end = start + .milliseconds(Int(plan.seconds * 1000))
        await withDiscardingTaskGroup { group in
            var last = ContinuousClock.now
            while true {
                let now = min(ContinuousClock.now, end)
                let t = Double((now - start) / .milliseconds(1)) / 1000
                step(target: plan.subscribers(at: t), elapsed: now - last, group: &group)
                // None leaves at the very end: nobody would join in its place.
                let due = now < end ? Int(t * churn) - state.withLock { $0.churned } : 0
                for _ in 0..<max(0, due) { churnOne(group: &group) }
                last = now
                if now >= end { break }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Waits (at most `limit`) until every dropped subscriber caught up again, so that its resume is counted.
    func waitForResumes(atMost limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline, state.withLock({ !$0.resuming.isEmpty }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Opens what the pace allows toward `target`, or closes the newest subscribers above it (with a close frame).
    private func step(target: Int, elapsed: Duration, group: inout DiscardingTaskGroup) {
        let (opens, closes) = state.withLock { state -> ([Int], [Member]) in
            let rate = connectRate
            state.tokens = min(
                Double(handshakes), state.tokens + rate * Double(elapsed / .microseconds(1)) / 1e6)
            let have = state.live.count + state.opening
            if have < target {
                let count = min(target - have, handshakes - state.opening, Int(state.tokens))
                guard count > 0 else { return ([], []) }
                state.tokens -= Double(count)
                state.opening += count
                defer { state.nextSlot += count }
                return (Array(state.nextSlot..<state.nextSlot + count), [])
            }
            // Only subscribed ones close: those still connecting are counted and close once above the target.
            let count = min(have - target, state.live.count)
            guard count > 0 else { return ([], []) }
            let leaving = Array(state.live.suffix(count))
            state.live.removeLast(count)
            for member in leaving { state.resuming[member.slot] = nil }
            return ([], leaving)
        }
        for slot in opens { group.addTask { await self.open(slot) } }
        for member in closes {
            group.addTask {
                await member.client.close()
                self.stats.cleanCloses.add(1, ordering: .relaxed)
            }
        }
    }

    private func open(_ slot: Int) async {
        let made: (TablecastClient, String)
        do {
            made = try make(slot) { [weak self] event in self?.event(event, slot: slot) }
        } catch {
            state.withLock { $0.opening -= 1 }
            stats.subscribeFailures.add(1, ordering: .relaxed)
            return
        }
        let (client, table) = made
        client.connect()
        let subscribed = await withTaskGroup(of: Bool.self) { race in
            race.addTask { (try? await client.subscribe(table)) != nil }
            race.addTask {
                try? await Task.sleep(for: self.timeout)
                return false
            }
            let first = await race.next() ?? false
            race.cancelAll()
            return first
        }
        if subscribed {
            state.withLock {
                $0.opening -= 1
                $0.live.append(Member(slot: slot, client: client, table: table))
            }
            stats.subscribersOpened.add(1, ordering: .relaxed)
        } else {
            state.withLock { $0.opening -= 1 }
            stats.subscribeFailures.add(1, ordering: .relaxed)
            await client.close()
        }
    }

    /// One churned subscriber, taking turns: leaves with a close frame, leaves without one (its socket dropped), or
    /// drops its connection and resumes with `since` (the client library's reconnect).
    private func churnOne(group: inout DiscardingTaskGroup) {
        let chosen = state.withLock { state -> (Member, Int)? in
            let turn = state.churned
            state.churned += 1
            let candidates = state.live.indices.filter { state.resuming[state.live[$0].slot] == nil }
            guard let index = candidates.randomElement() else { return nil }
            let member = state.live[index]
            if turn % 3 == 2 {
                state.resuming[member.slot] = Resume()
            } else {
                state.live.remove(at: index)
            }
            return (member, turn % 3)
        }
        guard let (member, kind) = chosen else { return }
        switch kind {
        case 0:
            group.addTask {
                await member.client.close()
                self.stats.cleanCloses.add(1, ordering: .relaxed)
            }
        case 1:
            // The socket is shut down before close() would send its frame: the server sees the TCP connection end.
            member.client.dropConnection(abruptly: true)
            group.addTask {
                await member.client.close()
                self.stats.abruptCloses.add(1, ordering: .relaxed)
            }
        default:
            member.client.dropConnection(abruptly: true)
        }
    }

    /// A member's client events that time a resume: its new connection, and its catch-up (`subscribed`).
    private func event(_ event: TablecastClient.Event, slot: Int) {
        switch event {
        case .state(.connecting):
            state.withLock { state in
                if state.resuming[slot] != nil { state.resuming[slot]!.reconnectedAt = LoadStats.now() }
            }
        case .snapshot:
            state.withLock { state in
                if state.resuming[slot]?.reconnectedAt != nil { state.resuming[slot]!.snapshot = true }
            }
        case .subscribed:
            let resumed = state.withLock { state -> Resume? in
                guard let resume = state.resuming[slot], resume.reconnectedAt != nil else { return nil }
                state.resuming[slot] = nil
                return resume
            }
            if let resumed, let at = resumed.reconnectedAt {
                stats.recordResume(reconnectedAt: at, bySnapshot: resumed.snapshot)
            }
        default: break
        }
    }
}
