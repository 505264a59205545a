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

            Over time: --stage ramps subscribers and intents/s (e.g. --stage 60s:5000:500 --stage 5m:5000:500 --stage \
            30s:0:0); --churn N has N subscribers a second leave or drop and resume while others join.
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
    var servers: [String] { url.split(separator: ",").map(String.init) }

    /// The servers, starting with the `index`-th (round robin), as one `--url` list for a client.
    func servers(from index: Int) -> String {
        let all = servers
        return (0..<all.count).map { all[(index + $0) % all.count] }.joined(separator: ",")
    }

    @Option(
        help:
            "Seconds to wait for the server while setting up (creating tables, connecting, subscribing) and for the final snapshots; exit 2 when it does not answer."
    )
    var timeout: Double = 30

    @OptionGroup var tls: TLSOptions

    @Option(
        name: .customLong("table"), help: "A table to load (repeatable). Default: 'load', or load-0… with --tables.")
    var tableNames: [String] = []

    @Option(
        name: .customLong("tables"),
        help: "Use this many tables named load-0, load-1, … (writers and subscribers spread over them).")
    var tableCount: Int?

    @Option(name: .customLong("subscribers"), help: "Subscriber connections (spread over the tables; default 10).")
    var subscribersFlag: Int?

    /// --subscribers, or the most the stages ask for.
    var subscribers: Int {
        drive.stages.isEmpty ? subscribersFlag ?? 10 : LoadPlan(stages: drive.stages).maxSubscribers
    }

    @Option(help: "Writer connections (spread over the tables).")
    var writers = 1

    @Option(help: "The intent mix, as weights (a batch deletes one row, inserts one and edits one).")
    var mix = "insert=25,delete=25,move=20,edit=25,batch=5"

    @Option(name: .customLong("duration"), help: "Run for this many seconds (unless --count is given; default 10).")
    var durationFlag: Double?
    var duration: Double { durationFlag ?? 10 }

    @Option(help: "Send this many intents in all, then stop.")
    var count: Int?

    @Option(
        name: .customLong("rate"),
        help: "Intents per second in all, paced evenly over the writers; 0 (default): as fast as acks return.")
    var rateFlag: Double?
    var rate: Double { rateFlag ?? 0 }

    @OptionGroup(title: "Stages and churn") var drive: LoadDriveOptions

    @OptionGroup(title: "Several generators") var fleet: LoadWorkerOptions

    @Option(help: "Intents each writer may have waiting for their ack.")
    var inFlight = 8

    enum BaseMode: String, ExpressibleByArgument, CaseIterable {
        case replica, none
    }

    @Option(
        help:
            "replica: intents carry the version of the view they were made from, and row ids (the server rebases them); none: no base and no ids (they apply to the table as it is, like a script's)."
    )
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

    @Option(
        help:
            "Subscribers that keep full replicas (checked for convergence); the others only scan each update for its origin and count it. Default: all."
    )
    var replicas: Int?

    @Flag(
        help:
            "Every writer subscribes and picks index paths from its own replica (default: the writers of a table share one subscribed view)."
    )
    var writersSubscribe = false

    @Flag(
        help:
            "Writers edit optimistically (the client library's submit, one intent in flight per writer, the rest queued): the report adds intent → own screen (the writer's predicted table shows it), which should be ~0, next to intent → delivery to the others. Needs --writers-subscribe."
    )
    var optimistic = false

    @Flag(
        help:
            "Writers without the client library: bare connections that keep --in-flight edits each in flight and match answers by ref, so the generator costs the server's machine little. Sends edits only (--mix edit=1), without base or ids; not with --rate or --writers-subscribe."
    )
    var rawWriters = false

    @Option(
        name: .customLong("threshold"),
        help: ArgumentHelp(
            "A pass/fail criterion (repeatable), as k6's thresholds: delivery.p99<200ms, ack.p50<=20ms, "
                + "errors.rate<1%, deliveries.rate>50000, intents.rate>=1000, convergence. All hold: exit 0; one "
                + "fails: exit 99, naming it.",
            valueName: "expression"),
        transform: { try LoadThreshold(parsing: $0) })
    var thresholds: [LoadThreshold] = []

    enum WindowRelease: String, ExpressibleByArgument, CaseIterable {
        case ack, delivery
    }

    @Option(
        help:
            "With --raw-writers, when an edit leaves its writer's --in-flight window: ack: when it is acked (the writers may run ahead of the fan-out, and delivery latency then includes that backlog); delivery: when it is acked and every subscriber of its table has it (as websocket-bench's publisher), so delivery latency measures the fan-out alone."
    )
    var windowUntil: WindowRelease = .ack

    @Option(help: "Start when no presence message arrived for this many seconds after connecting everyone.")
    var settle: Double = 1

    @Option(
        help:
            "The server's process id (on this machine): print its RSS per connection with everyone connected (before subscribing) and once everyone subscribed and presence settled, and report its CPU time over the run (from the first intent to the last delivery, after everyone connected) per delivery and per acked intent."
    )
    var serverPid: Int32?

    @Flag(help: "Print the report as JSON on stdout.")
    var json = false

    @OptionGroup var output: LoadOutputOptions

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
            throw ValidationError(
                "--optimistic needs --writers-subscribe (each writer edits its own predicted table), not --raw-writers or --stale"
            )
        }
        if windowUntil == .delivery, !rawWriters {
            throw ValidationError(
                "--window-until delivery is for --raw-writers (the client library's writers wait for acks)")
        }
        if rawWriters {
            guard parsed.weights.allSatisfy({ $0.kind == .edit || $0.weight == 0 }) else {
                throw ValidationError("--raw-writers sends edits only: give --mix edit=1")
            }
            guard rate == 0, !writersSubscribe else {
                throw ValidationError("--raw-writers runs as fast as answers return: no --rate, no --writers-subscribe")
            }
        }
        try validatePlan()
    }

    var url: String {
        urlFlag.isEmpty
            ? Environment.value("TABLECAST_URL") ?? ConnectionOptions.defaultURL : urlFlag.joined(separator: ",")
    }

    var tables: [String] {
        if !tableNames.isEmpty { return tableNames }
        if let tableCount { return (0..<max(1, tableCount)).map { "load-\($0)" } }
        return ["load"]
    }

    func run() async throws {
        let plan = drive.plan(subscribers: subscribers, rate: rate, seconds: duration)
        if drive.planOnly {
            return printPlan(plan ?? .constant(subscribers: subscribers, rate: rate, seconds: duration))
        }
        if let coordinator = fleet.workerOf { return try await runAsWorker(of: coordinator) }
        if fleet.workers + fleet.remoteWorkers > 1 { return try await coordinate() }
        let mix = try IntentMix(parsing: mix)
        let tables = self.tables
        let run = String(UInt64.random(in: 0...UInt64.max), radix: 36).prefix(8)
        // Workers share their coordinator's marker, so that each counts every worker's updates as this run's.
        let stats = LoadStats(
            refMarker: "\(fleet.runMarker ?? String(run)).", workerTag: fleet.runMarker == nil ? "" : String(run),
            budget: count ?? Int.max, keepsRawSamples: fleet.rawSamples != nil)
        ProcessMemory.raiseOpenFileLimit()
        let clientTLS = tls.clientTLS
        let transport = try TablecastTransport(
            configuration: .init(
                maxMessageSize: TablecastTransport.defaultMaxMessageSize, maxQueuedBytes: 64 << 20,
                maxQueuedMessages: 1 << 20,
                maxConnections: subscribers * (plan == nil ? 1 : 2) + drive.handshakes + writers + 64, tls: clientTLS))

        // Everything before the run answers within --timeout, or the run stops with exit 2 and the reason.
        let admin = try TablecastClient(
            configuration: .init(url: servers(from: 0), clientID: "load-\(run)-admin"), transport: transport)
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
            clientConfiguration(id, index, run: run)
        }
        let deliveries =
            windowUntil == .delivery
            ? DeliveryWindow(
                recipients: Dictionary(grouping: 0..<subscribers) { tables[$0 % tables.count] }.mapValues(\.count))
            : nil
        // With a plan, subscribers come and go during the run (the pool); otherwise all connect first.
        let pool = plan.map {
            self.subscribers(following: $0, tables: tables, run: run, transport: transport, stats: stats)
        }
        let subscriberClients = try (0..<(pool == nil ? subscribers : 0)).map { index in
            try subscriber(
                index, tables: tables, run: run, transport: transport, stats: stats, deliveries: deliveries)
        }
        let writerClients = try (0..<(rawWriters ? 0 : writers)).map { index in
            try TablecastClient(
                configuration: configuration("w\(index)", index), transport: transport,
                onEvent: stats.connections.tracker())
        }
        // What writers pick index paths from: their own replicas, or one subscribed view per table. Raw writers
        // need only the tables' shapes, which edits keep: they read them from a snapshot.
        let viewCount = rawWriters ? 0 : tables.count
        let views: [TablecastClient] =
            try writersSubscribe
            ? writerClients
            : (0..<viewCount).map { index in
                try TablecastClient(
                    configuration: configuration("v\(index)", index), transport: transport,
                    onEvent: stats.connections.tracker())
            }
        let everyone =
            subscriberClients.enumerated().map { ($1, tables[$0 % tables.count]) }
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
                while !writerClients.allSatisfy({ $0.connectionState == .live }) {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
        }
        if let pool, let plan { await pool.fill(to: plan.subscribers(at: 0)) }
        let parts =
            (rawWriters ? [] : ["\(writers) writer(s)"])
            + [pool == nil ? "\(subscribers) subscriber(s)" : "\(pool!.count) subscriber(s) (then as planned)"]
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
            progress(
                "presence still arriving after \(format(timeout))s (\(presence.count) message(s)); starting anyway\n")
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

        // Raw writers connect before the clock starts, as the library's writers did above.
        var raw: RawWriters?
        if rawWriters {
            var shapes: [String: [Int]] = [:]
            for table in tables {
                shapes[table] = try await snapshot(table, transport: transport).table.sections.map(\.rows.count)
            }
            let writers = RawWriters(
                rowsPerSection: shapes, window: inFlight, stats: stats, clientPrefix: "load-\(run)-raw",
                deliveries: deliveries)
            try await writers.connect(urls: servers, tables: tables, count: self.writers, tls: clientTLS)
            raw = writers
        }

        // The run (a worker's starts when all its coordinator's workers are ready).
        try await LoadWorkerLink.current?.barrier("ready")
        let start = ContinuousClock.now
        let startUptime = LoadStats.now()
        let sampler = LoadSampler(stats: stats, serverPid: serverPid, start: start)
        let serverCPUAtStart = serverPid.flatMap(ProcessMetrics.cpuSeconds(of:))
        let runSeconds = plan?.seconds ?? duration
        let deadline: ContinuousClock.Instant? = count == nil ? start + .milliseconds(Int(runSeconds * 1000)) : nil
        let progressTask = Task { await self.showProgress(stats, start: start) }
        let following = pool.map { pool in Task { await pool.follow(plan!, from: start) } }
        let pacing =
            drive.stages.isEmpty
            ? rate > 0 ? LoadPacing(plan: nil, rate: rate, writers: writers, start: start) : nil
            : LoadPacing(plan: plan, rate: 0, writers: writers, start: start)
        await raw?.run(until: deadline)
        await withTaskGroup(of: Void.self) { group in
            for (index, client) in writerClients.enumerated() {
                let table = tables[index % tables.count]
                let view = views[writersSubscribe ? index : index % tables.count]
                group.addTask {
                    await self.write(
                        index: index, client: client, view: view, table: table, mix: mix, stats: stats,
                        deadline: deadline, pacing: pacing)
                }
            }
        }
        let sendingSeconds = seconds(since: start)
        await following?.value
        await pool?.waitForResumes(atMost: .seconds(timeout))
        // A worker's replicas are compared once no worker sends any more.
        try await LoadWorkerLink.current?.barrier("sent")
        progressTask.cancel()
        _ = await progressTask.value

        // Updates still on their way, e.g. in the subscribers' socket buffers when the writers outran what this
        // process can read, are waited for (until none came for half a second, at most --timeout), so that the
        // latencies include the slowest rather than dropping them.
        _ = try await Self.waitUntilQuiet(
            for: .milliseconds(500), atMost: .seconds(timeout), polling: .milliseconds(50)
        ) {
            stats.deliveries.load(ordering: .relaxed)
        }
        // Before the convergence check's snapshots: the server's CPU for the run alone.
        let serverCPUSeconds = serverCPUAtStart.flatMap { atStart in
            serverPid.flatMap(ProcessMetrics.cpuSeconds(of:)).map { $0 - atStart }
        }

        // Convergence: every replica equals a fresh snapshot of its table.
        var failures: [String] = []
        var compared = 0
        // The subscribers connected at the end, those that came and stayed included.
        let watching = everyone + (pool?.members.map { ($0.client, $0.table) } ?? [])
        for table in tables {
            let truth = try await snapshot(table, transport: transport)
            let watchers = watching.filter { $0.1 == table && $0.0.configuration.keepsReplicas }.map(\.0)
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
        let deliverySeconds =
            lastDelivery > startUptime ? max(Double(lastDelivery - startUptime) / 1e9, sendingSeconds) : sendingSeconds

        // The series' last row, with the connections still open: every update was awaited above, so the rows add up
        // to the totals.
        let series = await sampler.finish()
        for client in writerClients + subscriberClients + (writersSubscribe ? [] : views)
            + (pool?.members.map(\.client) ?? [])
        {
            await client.close()
        }
        await transport.shutdown()
        try writeRawSamples(stats, run: run)
        try finish(
            LoadOutcome(
                stats: stats.snapshot, sendingSeconds: sendingSeconds, deliverySeconds: deliverySeconds,
                failures: failures, replicasCompared: compared, series: series,
                server: admin.server.map { [$0.name, $0.version] }, serverCPUSeconds: serverCPUSeconds), stats: stats,
            plan: plan)
    }
}
