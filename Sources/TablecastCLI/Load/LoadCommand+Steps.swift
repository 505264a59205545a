import ArgumentParser
import Foundation
import Histogram
import TableModel
import TablecastClient
import TablecastProtocol
import WebSocketTransport

/// The steps of a load run: writing, setting up, waiting and reporting progress.
extension LoadCommand {
    /// One writer: paced (one intent per interval, at --rate or the plan's rate) or as fast as its in-flight window
    /// allows.
    func write(
        index: Int, client: TablecastClient, view source: TablecastClient, table: String, mix: IntentMix,
        stats: LoadStats,
        deadline: ContinuousClock.Instant?, pacing: LoadPacing?
    ) async {
        var random = SystemRandomNumberGenerator()
        var frozen: Replica?
        var frozenUses = 0
        // Paced writers start a fraction of the interval apart: started together they would send in bursts of one
        // intent per writer, and the latency measured would be the burst's queueing rather than the server's.
        var next = ContinuousClock.now
        var interval = pacing?.interval(at: next)
        next += (interval ?? .zero) * (Double(index) / Double(writers))
        await withTaskGroup(of: Void.self) { group in
            var waiting = 0
            var sequence = 0
            while true {
                if waiting >= inFlight {
                    await group.next()
                    waiting -= 1
                }
                if let pacing {
                    // The next intent is due one interval after the last, the interval at the rate of now: it is
                    // looked at again every 50 ms while waiting, as a ramp's rate changes. While the rate is 0
                    // nothing is due (and no slot is missed).
                    let last = next
                    while deadline.map({ ContinuousClock.now < $0 }) ?? true {
                        let now = ContinuousClock.now
                        interval = pacing.interval(at: now)
                        guard let interval else {
                            next = now
                            try? await Task.sleep(for: .milliseconds(10))
                            continue
                        }
                        if max(last, next) + interval <= now {
                            next = max(last, next) + interval
                            break
                        }
                        try? await Task.sleep(for: min(max(last, next) + interval - now, .milliseconds(50)))
                    }
                }
                if let deadline, ContinuousClock.now >= deadline { break }
                if stats.remaining.subtract(1, ordering: .relaxed).newValue < 0 { break }
                if optimistic {
                    // Made against the writer's own predicted table, shown there before submit returns.
                    guard let predicted = client.predicted(table) else { break }
                    sequence += 1
                    let sentAt = LoadStats.now()
                    let ref = stats.ref(writer: index, sequence: sequence, sentAt: sentAt)
                    let intent = mix.intent(
                        for: predicted, value: .string("w\(index)-\(sequence)"), ids: true, using: &random)
                    stats.sent.add(1, ordering: .relaxed)
                    let pending: PendingIntent
                    do {
                        pending = try client.submit(intent, on: table, ref: ref)
                    } catch {
                        stats.recordError("local: \((error as? TableError)?.code.rawValue ?? "\(error)")")
                        continue
                    }
                    stats.recordOwnScreen(sentAt: sentAt)
                    group.addTask {
                        do {
                            let ack = try await pending.answer()
                            stats.recordAck(sentAt: sentAt, noop: ack?.noop ?? true)
                        } catch let error as ProtocolError {
                            stats.recordError(error.code.rawValue)
                        } catch let error as TableError {
                            // Queued behind another intent, what it named was deleted meanwhile.
                            stats.recordError("local: \(error.code.rawValue)")
                        } catch {
                            stats.recordError("client: \(error)")
                        }
                    }
                    waiting += 1
                    continue
                }
                if !stale || frozen == nil || frozenUses >= staleIntents {
                    frozen = source.replica(of: table)
                    frozenUses = 0
                }
                frozenUses += 1
                guard let view = frozen else { break }
                sequence += 1
                let sentAt = LoadStats.now()
                let ref = stats.ref(writer: index, sequence: sequence, sentAt: sentAt)
                let intent = mix.intent(
                    for: view.table, value: .string("w\(index)-\(sequence)"), ids: base == .replica, using: &random)
                let intentBase: TablecastClient.Base = base == .replica ? .version(view.version) : .current
                stats.sent.add(1, ordering: .relaxed)
                group.addTask {
                    do {
                        let ack = try await client.send(intent, to: table, base: intentBase, ref: ref)
                        stats.recordAck(sentAt: sentAt, noop: ack.noop)
                    } catch let error as ProtocolError {
                        stats.recordError(error.code.rawValue)
                    } catch {
                        stats.recordError("client: \(error)")
                    }
                }
                waiting += 1
            }
            // A paced writer that fell behind its schedule (waiting for acks with its window full) skipped the
            // slots between where it is and where it stopped: the report says how much of --rate was reached.
            if let interval {
                let end = min(ContinuousClock.now, deadline ?? ContinuousClock.now)
                if next < end { stats.missedSlots.add(Int((end - next) / interval), ordering: .relaxed) }
            }
        }
    }

    /// Runs a step of the set-up within --timeout; when the server does not answer, exits 2 with the reason.
    /// Waits until `count()` has not changed for `quiet`, or `limit` has passed in all, looking every `interval`:
    /// the last count, when it last changed, and whether it went quiet.
    static func waitUntilQuiet(
        for quiet: Duration, atMost limit: Duration, polling interval: Duration, _ count: () -> Int
    ) async throws -> (count: Int, lastChange: ContinuousClock.Instant, wentQuiet: Bool) {
        let start = ContinuousClock.now
        var seen = count()
        var lastChange = start
        while ContinuousClock.now - lastChange < quiet, ContinuousClock.now - start < limit {
            try await Task.sleep(for: interval)
            let now = count()
            if now != seen {
                seen = now
                lastChange = ContinuousClock.now
            }
        }
        return (seen, lastChange, ContinuousClock.now - lastChange >= quiet)
    }

    func setUp<T: Sendable>(diagnosing client: TablecastClient, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        switch await ConnectionOptions.within(timeout, diagnosing: client, body) {
        case .success(let value): return value
        case .failure(let error as ConnectionOptions.Unreachable):
            // Without shutting the transport down: connections still in their handshake would hold it.
            Output.error("tablecast load: \(error)")
            throw ExitCode(2)
        case .failure(let error): throw error
        }
    }

    func createTables(_ tables: [String], admin: TablecastClient) async throws {
        let perSection = initialRows / sections
        let contents = (0..<sections).map { s in
            SectionContent(
                header: "Section \(s)",
                rows: (0..<(perSection + (s < initialRows % sections ? 1 : 0))).map {
                    RowContent(value: .string("row \(s).\($0)"))
                })
        }
        for table in tables {
            do {
                try await admin.dropTable(table)
            } catch let error as ProtocolError where error.code == .noSuchTable {}
            try await admin.createTable(table, sections: contents)
        }
    }

    func snapshot(_ table: String, transport: TablecastTransport) async throws -> Replica {
        let client = try TablecastClient(configuration: .init(url: servers(from: 0)), transport: transport)
        client.connect()
        let replica = try await setUp(diagnosing: client) { try await client.subscribe(table) }
        await client.close()
        return replica
    }

    func showProgress(_ stats: LoadStats, start: ContinuousClock.Instant) async {
        guard !quiet else { return }
        var last = (acked: 0, deliveries: 0, time: start)
        while true {
            // Cancelled at the end of the run: a partial second's rates would be noise, so none is shown.
            do { try await Task.sleep(for: .seconds(1)) } catch { break }
            let now = ContinuousClock.now
            let acked = stats.acked.load(ordering: .relaxed)
            let deliveries = stats.deliveries.load(ordering: .relaxed)
            let span =
                Double((now - last.time).components.attoseconds) / 1e18 + Double((now - last.time).components.seconds)
            progress(
                String(
                    format: "\r%6.1fs  %8.0f intents/s  %10.0f deliveries/s  %d errors  ", seconds(since: start),
                    Double(acked - last.acked) / span, Double(deliveries - last.deliveries) / span,
                    stats.errorCount.load(ordering: .relaxed)))
            last = (acked, deliveries, now)
        }
        progress("\n")
    }

    func progress(_ text: String) {
        if !quiet { FileHandle.standardError.write(Data(text.utf8)) }
    }

    /// Seconds to the millisecond.
    func format(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    func seconds(since start: ContinuousClock.Instant) -> Double { seconds(ContinuousClock.now - start) }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Runs `body` for each element with at most `concurrency` at once.
    func forEach<T: Sendable>(
        _ items: [T], concurrency: Int, _ body: @escaping @Sendable (T) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var started = 0
            for item in items {
                if started >= concurrency { try await group.next() }
                group.addTask { try await body(item) }
                started += 1
            }
            try await group.waitForAll()
        }
    }
}
