import Synchronization

/// Closes a row of a load run's series every second: what the counters gained since the last row, the latencies
/// recorded meanwhile (taken out of `LoadStats`), the live connections and the server's memory. `finish()` closes
/// the last, partial row, so that the rows add up to the run's totals.
final class LoadSampler: Sendable {
    private struct Totals {
        var sent = 0
        var acked = 0
        var errors = 0
        var deliveries = 0
    }

    private struct State {
        var series = LoadSeries()
        var last = Totals()
        var lastTime: ContinuousClock.Instant
        var finished = false
    }

    private let stats: LoadStats
    private let serverPid: Int32?
    private let state: Mutex<State>
    private let ticker = Mutex<Task<Void, Never>?>(nil)

    /// Starts sampling at `start` (the run's start).
    init(stats: LoadStats, serverPid: Int32?, start: ContinuousClock.Instant) {
        self.stats = stats
        self.serverPid = serverPid
        state = Mutex(State(lastTime: start))
        let task = Task { [self] in
            // On a fixed schedule from the start, so that a late wake-up does not shift the seconds after it.
            var next = start
            while true {
                next += .seconds(1)
                do { try await Task.sleep(until: next) } catch { return }
                closeRow(at: ContinuousClock.now, last: false)
            }
        }
        ticker.withLock { $0 = task }
    }

    /// Stops sampling and closes the last row (when anything happened or time passed since the last one).
    func finish() async -> LoadSeries {
        let task = ticker.withLock { $0 }
        task?.cancel()
        await task?.value
        closeRow(at: ContinuousClock.now, last: true)
        return state.withLock { $0.series }
    }

    private func closeRow(at now: ContinuousClock.Instant, last: Bool) {
        state.withLock { state in
            guard !state.finished else { return }
            state.finished = last
            let totals = Totals(
                sent: stats.sent.load(ordering: .relaxed), acked: stats.acked.load(ordering: .relaxed),
                errors: stats.errorCount.load(ordering: .relaxed),
                deliveries: stats.deliveries.load(ordering: .relaxed))
            let span = now - state.lastTime
            let seconds = Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
            let latencies = stats.takeInterval()
            let row = LoadSeries.Row(
                second: state.series.rows.count + 1, seconds: (seconds * 1000).rounded() / 1000,
                connections: stats.connections.count,
                sent: totals.sent - state.last.sent, acked: totals.acked - state.last.acked,
                errors: totals.errors - state.last.errors, deliveries: totals.deliveries - state.last.deliveries,
                serverRSS: serverPid.flatMap(ProcessMemory.residentBytes(of:)),
                ack: LatencySamples(latencies.ack), delivery: LatencySamples(latencies.delivery))
            state.last = totals
            state.lastTime = now
            // A last row of nothing but a few milliseconds after the last full second adds only noise.
            let empty =
                row.sent == 0 && row.acked == 0 && row.errors == 0 && row.deliveries == 0 && row.ack.entries.isEmpty
                && row.delivery.entries.isEmpty
            if !(last && empty && seconds < 0.1) { state.series.rows.append(row) }
        }
    }
}
