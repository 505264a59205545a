import ArgumentParser
import Foundation
import Logging
import MemoryBudget
import ServiceLifecycle
import TableStore
import TablecastServer
import UnixSignals
import WebSocketTransport

/// `tablecast serve`: runs the server until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve shared tables over WebSocket (protocol tablecast.v1), stored in a SQLite file or PostgreSQL.",
        discussion: """
            With no flags: ws://127.0.0.1:8080/ and ./tablecast.db, everyone admin (loopback only).

            SIGINT/SIGTERM: stop accepting, finish and acknowledge in-flight commits, close connections with 1001, \
            checkpoint the WAL, exit 0. SIGHUP: reload --tls-cert and --tls-key (open connections stay), and the \
            tokens file, signed-token keys and --jwt-revoked-file (connections whose tokens they no longer accept are \
            closed with 4001; a file that does not load keeps the current ones).

            Exit codes: 1 could not start (port taken, bad flags or tokens file, database in use by another \
            server, unreadable or read-only, a missing or mismatched certificate), 3 the database is not a usable \
            Tablecast database (never replaced by a new one).

            --db postgresql://USER@HOST:PORT/DB (or TABLECAST_DB in the environment) stores everything in PostgreSQL, \
            which several nodes may share: any node accepts any table's intents.
            """)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "TCP port (0 picks a free one).")
    var port = 8080

    @Option(
        help:
            "The SQLite database file (created if missing), or postgresql://USER@HOST:PORT/DB. Default: $TABLECAST_DB, else tablecast.db."
    )
    var db = ProcessInfo.processInfo.environment["TABLECAST_DB"] ?? "tablecast.db"

    @Option(help: "Commit durability: full (fsync every commit) or normal (survives a crash, not a power loss).")
    var sync: Synchronous = .full

    @Option(help: "Store a snapshot of a table every N versions (bounds start-up replay).")
    var snapshotEvery = 1000

    @Option(help: "Updates kept per table for stale bases and resuming clients (older base: 'stale').")
    var history = 10_000

    @Option(
        help:
            "Bytes of updates kept per table in memory for resuming clients, e.g. 16M (older ones are read from the store)."
    )
    var historyBytes = ByteSize(16 << 20)

    @Option(
        help: ArgumentHelp(
            "Memory the server's histories, snapshots, replies and queues may take, e.g. 4G or 512M. Default: half of the machine's (or the cgroup's) memory.",
            valueName: "size"))
    var memoryLimit: ByteSize?

    @Option(
        help: ArgumentHelp(
            "History kept readable per table: a number of versions, an age (30d, 12h, 90m), both (10000,30d: whichever keeps more) or all.",
            valueName: "retention"))
    var historyRetention = HistoryRetention(versions: 10_000)

    @Option(
        help:
            "JSON file of tokens with roles per table pattern; without it only loopback is served and everyone is admin."
    )
    var tokens: String?

    @Option(
        help: ArgumentHelp(
            "File holding the HMAC secret of signed tokens (JWT, HS256/HS384/HS512; one trailing newline is not part of it). Reloaded on SIGHUP.",
            valueName: "file"))
    var jwtSecretFile: String?

    @Option(
        help: ArgumentHelp(
            "PEM public key of signed tokens (JWT): RSA (RS256/384/512), EC P-256 (ES256), P-384 (ES384) or Ed25519 (EdDSA). Repeatable, to rotate keys. Reloaded on SIGHUP.",
            valueName: "file"))
    var jwtPublicKey: [String] = []

    @Option(help: "The 'iss' every signed token must carry.")
    var jwtIssuer: String?

    @Option(help: "The 'aud' every signed token must carry (one of its values).")
    var jwtAudience: String?

    @Option(
        help: ArgumentHelp(
            "File of revoked signed tokens: their 'jti' or 'sub' values, one a line. Reloaded on SIGHUP, which closes the connections it revokes (4001).",
            valueName: "file"))
    var jwtRevokedFile: String?

    @Flag(help: "Serve a non-loopback address without a tokens file (everyone admin).")
    var allowAnonymous = false

    @Option(help: "Another Origin browsers may connect from (repeatable), besides the server's own pages.")
    var allowOrigin: [String] = []

    @Option(
        help:
            "Serve the browser page from this folder, read on each request (development). Default: the page built into the executable."
    )
    var staticDir: String?

    @Option(help: "Largest message a client may send, in bytes.")
    var maxMessageBytes = 1 << 20

    @Option(help: "Most entries in one batch.")
    var maxBatchEntries = 1000

    @Option(help: "Edit intents per second per connection (token bucket).")
    var intentsPerSecond = 1000

    @Option(help: "Intents one table may have waiting to be resolved; more are refused with rate_limited.")
    var maxQueuedIntents = 10_000

    @Option(help: "Most open WebSocket connections.")
    var maxConnections = 10_000

    @Option(
        help:
            "Seconds a connection has for its HTTP request and WebSocket upgrade; stalled ones (slowloris) are dropped after it."
    )
    var handshakeTimeout = 5

    @Option(
        help:
            "Stalled handshakes one address may have (connections without a completed upgrade a second after accept; 0: no cap); more are closed on accept."
    )
    var maxHandshakesPerAddress = 256

    @Option(help: "Outbound messages queued per connection before a slow reader is closed (4000).")
    var maxQueuedMessages = 16_384

    @Flag(help: "Count intents per table and outcome in /metrics (one series per table: off by default).")
    var perTableMetrics = false

    @Flag(help: "Serve /metrics only to loopback peers (see --metrics-token-file); /healthz stays open.")
    var metricsLoopbackOnly = false

    @Option(
        help:
            "File holding a token: /metrics is served to loopback, and to others sending 'Authorization: Bearer TOKEN' (/healthz is open)."
    )
    var metricsTokenFile: String?

    @Option(help: "PEM certificate chain: serve https/wss (needs --tls-key). Reloaded on SIGHUP.")
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(
        help:
            "Seconds an HTTP API request may wait for its answer before the server answers 503 unavailable in its place (its intent may still be committed: a retry with the same Idempotency-Key is safe)."
    )
    var httpAnswerTimeout: Double = 120

    @Option(help: ArgumentHelp("Test only: delay every commit by this many milliseconds.", visibility: .hidden))
    var debugCommitDelayMs = 0

    @Option(
        help: ArgumentHelp("Test only: HTTP event streams' heartbeat interval in milliseconds.", visibility: .hidden))
    var debugHeartbeatMs = 15_000

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Log format on stderr: text, or json (one object per line: time, level, message, label and fields).")
    var logFormat: LogFormat = .text

    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    enum Synchronous: String, ExpressibleByArgument, CaseIterable {
        case full, normal
    }

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535, not \(port)") }
        guard httpAnswerTimeout >= 0.1, httpAnswerTimeout <= 86_400 else {
            throw ValidationError("--http-answer-timeout must be 0.1…86400 seconds, not \(httpAnswerTimeout)")
        }
    }

    func run() async throws {
        let (format, level) = (logFormat, logLevel)
        LoggingSystem.bootstrap { label in
            guard format == .text else { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "tablecast")
        // Each connection is a descriptor: allow as many as the hard limit does (often 1,024 soft).
        ProcessMemory.raiseOpenFileLimit()
        let tls: ServerTLS?
        switch (tlsCert, tlsKey) {
        case (let certificate?, let key?):
            tls = ServerTLS(certificatePath: certificate, privateKeyPath: key)
        case (nil, nil):
            tls = nil
        default:
            logger.critical("cannot start: --tls-cert and --tls-key go together")
            throw ExitCode(1)
        }
        do {
            try tls?.validate()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(1)
        }
        let policy: AccessPolicy
        let endpointAccess: EndpointAccess
        let access = accessFiles
        do {
            policy = try await access.load()
            endpointAccess =
                try metricsTokenFile.map { .loopbackOrToken(try Self.readToken($0)) }
                ?? (metricsLoopbackOnly ? .loopback : .everyone)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
        var secretFiles = access.secretFiles
        if let metricsTokenFile { secretFiles.append(("--metrics-token-file", metricsTokenFile)) }
        for (flag, path) in secretFiles {
            if Self.isWorldReadable(path) {
                logger.warning("\(flag) \(path) is readable by every user of this machine: chmod o-r \(path)")
            }
        }
        if (jwtIssuer != nil || jwtAudience != nil || jwtRevokedFile != nil) && !access.signedTokens {
            logger.critical(
                "cannot start: --jwt-issuer, --jwt-audience and --jwt-revoked-file need --jwt-secret-file or --jwt-public-key"
            )
            throw ExitCode(1)
        }
        if allowAnonymous && !policy.requiresToken && !["127.0.0.1", "::1", "localhost"].contains(host) {
            logger.warning("--allow-anonymous on \(host): anyone who reaches port \(port) is admin of every table")
        }
        let staticFiles: StaticFiles
        if let staticDir {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: staticDir, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                logger.critical("cannot start: --static-dir \(staticDir) is not a folder")
                throw ExitCode(1)
            }
            staticFiles = .directory(staticDir)
        } else {
            staticFiles = .memory(EmbeddedPage.files.filter { !$0.key.hasPrefix("schema/") })
        }
        let prometheusPage = PrometheusBackend.bootstrap(descriptions: TableServer.metricDescriptions)
        var configuration = TableServer.Configuration(
            host: host, port: port, databasePath: db, synchronous: sync == .full ? .full : .normal,
            snapshotInterval: snapshotEvery, historyLimit: history, policy: policy, allowAnonymous: allowAnonymous,
            allowedOrigins: allowOrigin,
            staticFiles: staticFiles, maxMessageBytes: maxMessageBytes,
            maxBatchEntries: maxBatchEntries, intentsPerSecond: intentsPerSecond, maxConnections: maxConnections,
            maxQueuedMessages: maxQueuedMessages, maxQueuedIntents: maxQueuedIntents, tls: tls,
            metricsPage: { prometheusPage() + [UInt8(ascii: "\n")] + ProcessMetrics.exposition() },
            perTableMetrics: perTableMetrics, endpointAccess: endpointAccess,
            handshakeTimeout: .seconds(max(1, handshakeTimeout)),
            maxHandshakesPerAddress: maxHandshakesPerAddress > 0 ? maxHandshakesPerAddress : nil)
        configuration.historyRetention = historyRetention
        configuration.historyBytes = historyBytes.bytes
        if let memoryLimit { configuration.memoryLimit = memoryLimit.bytes }
        configuration.debugCommitDelay = .milliseconds(max(0, debugCommitDelayMs))
        configuration.openAPIDocument = EmbeddedPage.files["openapi.yaml"] ?? []
        for (name, bytes) in EmbeddedPage.files where name.hasPrefix("schema/") {
            configuration.openAPISchemas[String(name.dropFirst("schema/".count))] = bytes
        }
        configuration.eventStreamHeartbeat = .milliseconds(max(10, debugHeartbeatMs))
        configuration.httpAnswerTimeout = .milliseconds(Int(httpAnswerTimeout * 1000))
        // The signals are trapped before anything starts: one that arrives while the server starts is handled
        // once it has, rather than killing it with the default action.
        let stops = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let serve = ServeService(
            configuration: configuration, staticDir: staticDir, tlsCert: tlsCert, access: access, hangups: hangups,
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [serve], logger: logger))
        do {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                tasks.addTask {
                    for await signal in stops {
                        logger.info("shutting down", metadata: ["signal": .stringConvertible(signal.rawValue)])
                        await group.triggerGracefulShutdown()
                    }
                }
                // The group ends after graceful shutdown, or at once when the server cannot start.
                try await tasks.next()
                tasks.cancelAll()
            }
        } catch let error as StoreError where [.notADatabase, .foreign, .corrupt].contains(error.kind) {
            logger.critical("cannot use the database: \(error)")
            throw ExitCode(3)
        } catch let error as StoreError {
            logger.critical("cannot use the database: \(error.message)")
            throw ExitCode(1)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(1)
        }
    }

    /// The files the access policy is read from.
    private var accessFiles: AccessFiles {
        AccessFiles(
            tokens: tokens, secretFile: jwtSecretFile, publicKeyFiles: jwtPublicKey, issuer: jwtIssuer,
            audience: jwtAudience, revokedFile: jwtRevokedFile)
    }

    private static func isWorldReadable(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IROTH != 0
    }

    /// The token in `path`, without surrounding whitespace.
    private static func readToken(_ path: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("cannot read --metrics-token-file \(path)")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw ValidationError("--metrics-token-file \(path) is empty") }
        return token
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// A size in bytes as people write it: `512M`, `4G`, `1.5GiB` or a plain number.
struct ByteSize: ExpressibleByArgument {
    let bytes: Int

    init(_ bytes: Int) { self.bytes = bytes }

    init?(argument: String) {
        guard let bytes = MemorySize.parse(argument) else { return nil }
        self.bytes = bytes
    }

    var defaultValueDescription: String { MemorySize.text(bytes) }
}

extension HistoryRetention: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
    public var defaultValueDescription: String { description }
}
