import ArgumentParser
import Foundation
import Histogram
import TableModel
import TablecastClient
import TablecastProtocol
import WebSocketTransport

/// `tablecast load`: subscribers and writers against one or more tables, an intent mix, a report, and a final
/// convergence check of every replica against a fresh snapshot.
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Load-test a server: N subscribers and W writers, an intent mix, latency percentiles, convergence.",
        discussion: """
            Writers are subscribed too (they pick index paths from their replica). Each intent's ref carries its send \
            time, so intent → delivery latency is measured at every subscriber. At the end every replica kept (see \
            --replicas) is compared with a fresh snapshot; any difference fails the run (exit code 1).

            Servers limit intents per connection (default 1,000/s): raise `serve --intents-per-second` for benchmarks.
            """)

    @Option(
        name: .customLong("url"),
        help: """
            The server (default: $TABLECAST_URL, else ws://127.0.0.1:8080/); repeat it (or separate with commas) for \
            several nodes: writer i starts on node i, subscriber i on node i+1 (so writer 0's updates reach \
            subscriber 0 through another node), each failing over to the next.
            """)
    var urlFlag: [String] = []

    /// Every server named by `--url`.
    private var servers: [String] { url.split(separator: ",").map(String.init) }

    /// The servers, starting with the `index`-th (round robin), as one `--url` list for a client.
    private func servers(from index: Int) -> String {
        let all = servers
        return (0..<all.count).map { all[(index + $0) % all.count] }.joined(separator: ",")
    }

    @Option(help: "Seconds to wait for the server while setting up (creating tables, connecting, subscribing) and for the final snapshots; exit 2 when it does not answer.")
    var timeout: Double = 30

    @OptionGroup var tls: TLSOptions

    @Option(name: .customLong("table"), help: "A table to load (repeatable). Default: 'load', or load-0… with --tables.")
    var tableNames: [String] = []

    @Option(name: .customLong("tables"), help: "Use this many tables named load-0, load-1, … (writers and subscribers spread over them).")
    var tableCount: Int?

    @Option(help: "Subscriber connections (spread over the tables).")
    var subscribers = 10

    @Option(help: "Writer connections (spread over the tables).")
    var writers = 1

    @Option(help: "The intent mix, as weights (a batch deletes one row, inserts one and edits one).")
    var mix = "insert=25,delete=25,move=20,edit=25,batch=5"

    @Option(help: "Run for this many seconds (unless --count is given).")
    var duration: Double = 10

    @Option(help: "Send this many intents in all, then stop.")
    var count: Int?

    @Option(help: "Intents per second in all, paced evenly over the writers; 0: as fast as acks return.")
    var rate: Double = 0

    @Option(help: "Intents each writer may have waiting for their ack.")
    var inFlight = 8

    enum BaseMode: String, ExpressibleByArgument, CaseIterable {
        case replica, none
    }

    @Option(help: "replica: intents carry the version of the view they were made from, and row ids (the server rebases them); none: no base and no ids (they apply to the table as it is, like a script's).")
    var base: BaseMode = .replica

    @Flag(help: "Contention: writers make intents from a stale view of their replica (bases behind the table).")
    var stale = false

    @Option(help: "With --stale: intents made from one frozen view before a writer looks at its replica again.")
    var staleIntents = 32

    @Flag(help: "Drop and create the tables first, with --initial-rows rows in --sections sections.")
    var create = false

    @Option(help: "Rows of each created table.")
    var initialRows = 100

    @Option(help: "Sections of each created table.")
    var sections = 10

    @Option(help: "Subscribers that keep full replicas (checked for convergence); the others only scan each update for its origin and count it. Default: all.")
    var replicas: Int?

    @Flag(help: "Every writer subscribes and picks index paths from its own replica (default: the writers of a table share one subscribed view).")
    var writersSubscribe = false

    @Flag(help: "Writers edit optimistically (the client library's submit, one intent in flight per writer, the rest queued): the report adds intent → own screen (the writer's predicted table shows it), which should be ~0, next to intent → delivery to the others. Needs --writers-subscribe.")
    var optimistic = false

    @Flag(help: "Writers without the client library: bare connections that keep --in-flight edits each in flight and match answers by ref, so the generator costs the server's machine little. Sends edits only (--mix edit=1), without base or ids; not with --rate or --writers-subscribe.")
    var rawWriters = false

    enum WindowRelease: String, ExpressibleByArgument, CaseIterable {
        case ack, delivery
    }

    @Option(help: "With --raw-writers, when an edit leaves its writer's --in-flight window: ack: when it is acked (the writers may run ahead of the fan-out, and delivery latency then includes that backlog); delivery: when it is acked and every subscriber of its table has it (as websocket-bench's publisher), so delivery latency measures the fan-out alone.")
    var windowUntil: WindowRelease = .ack

    @Option(help: "Start when no presence message arrived for this many seconds after connecting everyone.")
    var settle: Double = 1

    @Option(help: "The server's process id (on this machine): print its RSS per connection with everyone connected (before subscribing) and once everyone subscribed and presence settled.")
    var serverPid: Int32?

    @Flag(help: "Print the report as JSON on stdout.")
    var json = false

    @Flag(help: "No progress line on stderr.")
    var quiet = false

    func validate() throws {
        guard subscribers >= 0, writers >= 1, inFlight >= 1, duration > 0, rate >= 0, sections >= 1, initialRows >= 0,
            timeout > 0
        else {
            throw ValidationError("counts must be positive (writers ≥ 1, in-flight ≥ 1, sections ≥ 1)")
        }
        let parsed = try IntentMix(parsing: mix)
        if optimistic, !writersSubscribe || rawWriters || stale {
            throw ValidationError("--optimistic needs --writers-subscribe (each writer edits its own predicted table), not --raw-writers or --stale")
        }
        if windowUntil == .delivery, !rawWriters {
            throw ValidationError("--window-until delivery is for --raw-writers (the client library's writers wait for acks)")
        }
        if rawWriters {
            guard parsed.weights.allSatisfy({ $0.kind == .edit || $0.weight == 0 }) else {
                throw ValidationError("--raw-writers sends edits only: give --mix edit=1")
            }
            guard rate == 0, !writersSubscribe else {
                throw ValidationError("--raw-writers runs as fast as answers return: no --rate, no --writers-subscribe")
            }
        }
    }

    private var url: String {
        urlFlag.isEmpty ? Environment.value("TABLECAST_URL") ?? ConnectionOptions.defaultURL : urlFlag.joined(separator: ",")
    }

    private var tables: [String] {
        if !tableNames.isEmpty { return tableNames }
        if let tableCount { return (0..<max(1, tableCount)).map { "load-\($0)" } }
        return ["load"]
    }

    func run() async throws {
        let mix = try IntentMix(parsing: mix)
        let tables = self.tables
        let run = String(UInt64.random(in: 0...UInt64.max), radix: 36).prefix(8)
        let stats = LoadStats(refMarker: "\(run).", budget: count ?? Int.max)
        ProcessMemory.raiseOpenFileLimit()
        let clientTLS = tls.clientTLS
        let transport = try TablecastTransport(
            configuration: .init(
                maxMessageSize: TablecastTransport.defaultMaxMessageSize, maxQueuedBytes: 64 << 20,
                maxQueuedMessages: 1 << 20, maxConnections: subscribers + writers + 64, tls: clientTLS))

        // Everything before the run answers within --timeout, or the run stops with exit 2 and the reason.
        let admin = try TablecastClient(configuration: .init(url: servers(from: 0), clientID: "load-\(run)-admin"), transport: transport)
        let adminTLSWatch = exitOnTLSFailure(of: admin, url: url)
        defer { adminTLSWatch.cancel() }
        admin.connect()
        try await setUp(diagnosing: admin) {
            _ = try await admin.listTables()
            if create { try await createTables(tables, admin: admin) }
        }
        await admin.close()

        // Connect everyone and subscribe, at most a few hundred handshakes at a time.
        func configuration(_ id: String, _ index: Int) -> TablecastClient.Configuration {
            var configuration = TablecastClient.Configuration(url: servers(from: index), clientID: "load-\(run)-\(id)")
            configuration.observesPresence = false
            return configuration
        }
        let deliveries = windowUntil == .delivery
            ? DeliveryWindow(recipients: Dictionary(grouping: 0..<subscribers) { tables[$0 % tables.count] }.mapValues(\.count))
            : nil
        let subscriberClients = try (0..<subscribers).map { index in
            var settings = configuration("s\(index)", index + 1)
            settings.keepsReplicas = replicas.map { index < $0 } ?? true
            return try TablecastClient(
                configuration: settings, transport: transport,
                onEvent: { event in
                    switch event {
                    case .update(let update, _):
                        stats.recordDelivery(originRef: update.originRef, subscriber: index)
                        if let deliveries, let ref = update.originRef { deliveries.answered(ref) }
                    case .updateSeen(_, _, _, let ref):
                        stats.recordDelivery(originRef: ref, subscriber: index)
                        if let deliveries, let ref { deliveries.answered(ref) }
                    default: break
                    }
                })
        }
        let writerClients = try (0..<(rawWriters ? 0 : writers)).map { index in
            try TablecastClient(configuration: configuration("w\(index)", index), transport: transport)
        }
        // What writers pick index paths from: their own replicas, or one subscribed view per table. Raw writers
        // need only the tables' shapes, which edits keep: they read them from a snapshot.
        let viewCount = rawWriters ? 0 : tables.count
        let views: [TablecastClient] = try writersSubscribe
            ? writerClients
            : (0..<viewCount).map { index in
                try TablecastClient(configuration: configuration("v\(index)", index), transport: transport)
            }
        let everyone = subscriberClients.enumerated().map { ($1, tables[$0 % tables.count]) }
            + views.enumerated().map { ($1, tables[$0 % tables.count]) }
        let rssBefore = serverPid.flatMap(ProcessMemory.residentBytes(of:))
        let connectStart = ContinuousClock.now
        let tlsWatch = everyone.first.map { exitOnTLSFailure(of: $0.0, url: url) }
        defer { tlsWatch?.cancel() }
        let subscribing = everyone
        // Raw writers with no subscribers leave nobody to connect here: they connect when the run starts.
        // With --server-pid, everyone connects first and the server's memory is read before anyone subscribes:
        // what an idle connection costs, and then what a subscription with presence adds.
        var rssIdle: Int?
        if let first = everyone.first?.0 ?? writerClients.first {
            rssIdle = try await setUp(diagnosing: first) {
                guard let serverPid else { return nil }
                try await self.forEach(subscribing, concurrency: 200) { client, _ in
                    client.connect()
                    while client.connectionState != .live { try await Task.sleep(for: .milliseconds(5)) }
                }
                return ProcessMemory.residentBytes(of: serverPid)
            }
            try await setUp(diagnosing: first) {
                try await self.forEach(subscribing, concurrency: 200) { client, table in
                    client.connect()
                    try await client.subscribe(table)
                }
                for client in writerClients { client.connect() }
                while !writerClients.allSatisfy({ $0.connectionState == .live }) { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        let parts =
            (rawWriters ? [] : ["\(writers) writer(s)"]) + ["\(subscribers) subscriber(s)"]
            + (writersSubscribe || rawWriters ? [] : ["\(views.count) shared view(s) for the writers"])
        progress(
            "connected \(parts.joined(separator: ", ")) to \(tables.count) table(s) in \(format(seconds(since: connectStart)))s"
                + (rawWriters ? "; \(writers) raw writer(s) connect at the start of the run\n" : "\n"))
        // Each join is a presence delta to every subscriber of the table (at most one per table every 100 ms; these
        // clients have no names, so the deltas only count viewers). Let them drain before measuring: wait until no
        // presence arrived for `settle` seconds (at most --timeout in all).
        let settleStart = ContinuousClock.now
        let presence = try await Self.waitUntilQuiet(
            for: .milliseconds(Int(settle * 1000)), atMost: .milliseconds(Int(timeout * 1000)),
            polling: .milliseconds(min(100, Int(settle * 1000)))
        ) { everyone.reduce(0) { $0 + $1.0.skippedPresenceCount } }
        if presence.wentQuiet {
            progress(
                "presence of the joins: \(presence.count) message(s), the last \(format(seconds(presence.lastChange - settleStart)))s "
                    + "after connecting; then none for \(format(settle))s\n")
        } else {
            progress("presence still arriving after \(format(timeout))s (\(presence.count) message(s)); starting anyway\n")
        }
        if let serverPid, let rssBefore, let rssAfter = ProcessMemory.residentBytes(of: serverPid) {
            let connections = everyone.count + (writersSubscribe ? 0 : writerClients.count)
            if let rssIdle {
                print(
                    "server RSS: \(rssIdle / 1024) KiB with \(everyone.count) idle connections (connected, not subscribed): "
                        + "\((rssIdle - rssBefore) / max(1, everyone.count)) bytes per connection")
            }
            print(
                "server RSS: \(rssBefore / 1024) KiB before, \(rssAfter / 1024) KiB with \(connections) connections: "
                    + "\((rssAfter - rssBefore) / max(1, connections)) bytes per connection")
        }

        // The run.
        let start = ContinuousClock.now
        let startUptime = LoadStats.now()
        let deadline: ContinuousClock.Instant? = count == nil ? start + .milliseconds(Int(duration * 1000)) : nil
        let progressTask = Task { await self.showProgress(stats, start: start) }
        let perWriterInterval: Duration? = rate > 0 ? .nanoseconds(Int(1e9 * Double(writers) / rate)) : nil
        if rawWriters {
            var shapes: [String: [Int]] = [:]
            for table in tables { shapes[table] = try await snapshot(table, transport: transport).table.sections.map(\.rows.count) }
            try await RawWriters(
                rowsPerSection: shapes, window: inFlight, stats: stats, clientPrefix: "load-\(run)-raw", deadline: deadline,
                deliveries: deliveries
            ).run(urls: servers, tables: tables, count: writers, tls: clientTLS)
        }
        await withTaskGroup(of: Void.self) { group in
            for (index, client) in writerClients.enumerated() {
                let table = tables[index % tables.count]
                let view = views[writersSubscribe ? index : index % tables.count]
                group.addTask {
                    await self.write(
                        index: index, client: client, view: view, table: table, mix: mix, stats: stats,
                        deadline: deadline, interval: perWriterInterval)
                }
            }
        }
        let sendingSeconds = seconds(since: start)
        progressTask.cancel()
        _ = await progressTask.value

        // Updates still on their way, e.g. in the subscribers' socket buffers when the writers outran what this
        // process can read, are waited for (until none came for half a second, at most --timeout), so that the
        // latencies include the slowest rather than dropping them.
        _ = try await Self.waitUntilQuiet(for: .milliseconds(500), atMost: .seconds(timeout), polling: .milliseconds(50)) {
            stats.deliveries.load(ordering: .relaxed)
        }

        // Convergence: every replica equals a fresh snapshot of its table.
        var failures: [String] = []
        var compared = 0
        for table in tables {
            let truth = try await snapshot(table, transport: transport)
            let watchers = everyone.filter { $0.1 == table && $0.0.configuration.keepsReplicas }.map(\.0)
            let settle = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < settle,
                !watchers.allSatisfy({ ($0.replica(of: table)?.version ?? 0) >= truth.version })
            {
                try await Task.sleep(for: .milliseconds(20))
            }
            compared += watchers.count
            for client in watchers {
                guard let replica = client.replica(of: table) else {
                    failures.append("\(client.configuration.clientID): no replica of \(table)")
                    continue
                }
                if !replica.hasSameContents(as: truth) {
                    failures.append(
                        "\(client.configuration.clientID): replica of \(table) at version \(replica.version) differs from "
                            + "the snapshot at version \(truth.version)")
                }
            }
        }
        let lastDelivery = stats.lastDelivery.load(ordering: .relaxed)
        let deliverySeconds = lastDelivery > startUptime ? max(Double(lastDelivery - startUptime) / 1e9, sendingSeconds) : sendingSeconds

        for client in writerClients + subscriberClients + (writersSubscribe ? [] : views) {
            await client.close()
        }
        await transport.shutdown()

        let report = LoadReport(
            stats: stats, sendingSeconds: sendingSeconds, deliverySeconds: deliverySeconds, failures: failures,
            replicasCompared: compared, requestedRate: rate,
            settings: [
                "url": .string(servers.joined(separator: ",")), "tables": .array(tables.map(JSONValue.string)),
                "subscribers": .number(Double(subscribers)), "writers": .number(Double(writers)), "mix": .string(mix.description),
                "rate": .number(rate), "inFlight": .number(Double(inFlight)), "stale": .bool(stale), "base": .string(base.rawValue),
                "writersSubscribe": .bool(writersSubscribe), "rawWriters": .bool(rawWriters), "optimistic": .bool(optimistic),
                "windowUntil": .string(windowUntil.rawValue),
                "replicas": .number(Double(replicas.map { min($0, subscribers) } ?? subscribers)),
            ])
        if let warning = report.rateWarning { Output.error("tablecast load: warning: \(warning)") }
        print(json ? report.json.jsonText : report.text)
        if !failures.isEmpty { throw ExitCode(1) }
    }

    /// One writer: paced (one intent per interval) or as fast as its in-flight window allows.
    private func write(
        index: Int, client: TablecastClient, view source: TablecastClient, table: String, mix: IntentMix, stats: LoadStats,
        deadline: ContinuousClock.Instant?, interval: Duration?
    ) async {
        var random = SystemRandomNumberGenerator()
        var frozen: Replica?
        var frozenUses = 0
        // Paced writers start a fraction of the interval apart: started together they would send in bursts of one
        // intent per writer, and the latency measured would be the burst's queueing rather than the server's.
        var next = ContinuousClock.now + (interval ?? .zero) * (Double(index) / Double(writers))
        await withTaskGroup(of: Void.self) { group in
            var waiting = 0
            var sequence = 0
            while true {
                if waiting >= inFlight {
                    await group.next()
                    waiting -= 1
                }
                if let interval {
                    next += interval
                    if next > ContinuousClock.now { try? await Task.sleep(until: next) }
                }
                if let deadline, ContinuousClock.now >= deadline { break }
                if stats.remaining.subtract(1, ordering: .relaxed).newValue < 0 { break }
                if optimistic {
                    // Made against the writer's own predicted table, shown there before submit returns.
                    guard let predicted = client.predicted(table) else { break }
                    sequence += 1
                    let sentAt = LoadStats.now()
                    let ref = stats.ref(writer: index, sequence: sequence, sentAt: sentAt)
                    let intent = mix.intent(for: predicted, value: .string("w\(index)-\(sequence)"), ids: true, using: &random)
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
    private static func waitUntilQuiet(
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

    private func setUp<T: Sendable>(diagnosing client: TablecastClient, _ body: @escaping @Sendable () async throws -> T)
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

    private func createTables(_ tables: [String], admin: TablecastClient) async throws {
        let perSection = initialRows / sections
        let contents = (0..<sections).map { s in
            SectionContent(
                header: "Section \(s)",
                rows: (0..<(perSection + (s < initialRows % sections ? 1 : 0))).map { RowContent(value: .string("row \(s).\($0)")) })
        }
        for table in tables {
            do {
                try await admin.dropTable(table)
            } catch let error as ProtocolError where error.code == .noSuchTable {}
            try await admin.createTable(table, sections: contents)
        }
    }

    private func snapshot(_ table: String, transport: TablecastTransport) async throws -> Replica {
        let client = try TablecastClient(configuration: .init(url: servers(from: 0)), transport: transport)
        client.connect()
        let replica = try await setUp(diagnosing: client) { try await client.subscribe(table) }
        await client.close()
        return replica
    }

    private func showProgress(_ stats: LoadStats, start: ContinuousClock.Instant) async {
        guard !quiet else { return }
        var last = (acked: 0, deliveries: 0, time: start)
        while true {
            // Cancelled at the end of the run: a partial second's rates would be noise, so none is shown.
            do { try await Task.sleep(for: .seconds(1)) } catch { break }
            let now = ContinuousClock.now
            let acked = stats.acked.load(ordering: .relaxed)
            let deliveries = stats.deliveries.load(ordering: .relaxed)
            let span = Double((now - last.time).components.attoseconds) / 1e18 + Double((now - last.time).components.seconds)
            progress(
                String(
                    format: "\r%6.1fs  %8.0f intents/s  %10.0f deliveries/s  %d errors  ", seconds(since: start),
                    Double(acked - last.acked) / span, Double(deliveries - last.deliveries) / span,
                    stats.errorCount.load(ordering: .relaxed)))
            last = (acked, deliveries, now)
        }
        progress("\n")
    }

    private func progress(_ text: String) {
        if !quiet { FileHandle.standardError.write(Data(text.utf8)) }
    }

    /// Seconds to the millisecond.
    private func format(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    private func seconds(since start: ContinuousClock.Instant) -> Double { seconds(ContinuousClock.now - start) }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Runs `body` for each element with at most `concurrency` at once.
    private func forEach<T: Sendable>(
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
