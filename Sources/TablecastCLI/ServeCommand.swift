import ArgumentParser
import Foundation
import Logging
import TableStore
import TablecastServer

/// `tablecast serve`: runs the server until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve shared tables over WebSocket (protocol tablecast.v1), stored in a SQLite file.",
        discussion: """
            With no flags: ws://127.0.0.1:8080/ and ./tablecast.db, everyone admin (loopback only).
            SIGINT/SIGTERM: stop accepting, finish and acknowledge in-flight commits, close connections with 1001,
            checkpoint the WAL, exit 0. Exit codes: 1 could not start (port taken, bad flags or tokens file),
            3 the database is not a usable Tablecast database (never replaced by a new one).
            """)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "TCP port (0 picks a free one).")
    var port = 8080

    @Option(help: "The SQLite database file (created if missing).")
    var db = "tablecast.db"

    @Option(help: "Commit durability: full (fsync every commit) or normal (survives a crash, not a power loss).")
    var sync: Synchronous = .full

    @Option(help: "Store a snapshot of a table every N versions (bounds start-up replay).")
    var snapshotEvery = 1000

    @Option(help: "Updates kept per table for stale bases and resuming clients (older base: 'stale').")
    var history = 10_000

    @Option(help: "JSON file of tokens with roles per table pattern; without it only loopback is served and everyone is admin.")
    var tokens: String?

    @Flag(help: "Serve a non-loopback address without a tokens file (everyone admin).")
    var allowAnonymous = false

    @Option(help: "An Origin browsers may connect from (repeatable). Default: the server's own pages only.")
    var allowOrigin: [String] = []

    @Option(help: "Directory served over HTTP at / (the browser client). Default: web-client-protocol/client if present.")
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

    @Option(help: "Seconds a connection has for its HTTP request and WebSocket upgrade; stalled ones (slowloris) are dropped after it.")
    var handshakeTimeout = 5

    @Option(help: "Connections one address may have open before their upgrade completes (0: no cap); more are closed on accept.")
    var maxHandshakesPerAddress = 256

    @Option(help: "Outbound messages queued per connection before a slow reader is closed (4000).")
    var maxQueuedMessages = 16_384

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    enum Synchronous: String, ExpressibleByArgument, CaseIterable {
        case full, normal
    }

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = logLevel
            return handler
        }
        let logger = Logger(label: "tablecast")
        // Each connection is a descriptor: allow as many as the hard limit does (often 1,024 soft).
        ProcessMemory.raiseOpenFileLimit()
        let policy: AccessPolicy
        do {
            policy = try tokens.map(TokensFile.load) ?? .open
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
        let configuration = TableServer.Configuration(
            host: host, port: port, databasePath: db, synchronous: sync == .full ? .full : .normal,
            snapshotInterval: snapshotEvery, historyLimit: history, policy: policy, allowAnonymous: allowAnonymous,
            allowedOrigins: allowOrigin.isEmpty ? nil : allowOrigin,
            staticFilesDirectory: staticDir ?? Self.defaultStaticDirectory(), maxMessageBytes: maxMessageBytes,
            maxBatchEntries: maxBatchEntries, intentsPerSecond: intentsPerSecond, maxConnections: maxConnections,
            maxQueuedMessages: maxQueuedMessages, maxQueuedIntents: maxQueuedIntents,
            handshakeTimeout: .seconds(max(1, handshakeTimeout)),
            maxHandshakesPerAddress: maxHandshakesPerAddress > 0 ? maxHandshakesPerAddress : nil)
        let server: TableServer
        do {
            server = try await TableServer.start(configuration, logger: logger)
        } catch let error as StoreError {
            logger.critical("cannot use the database: \(error)")
            throw ExitCode(3)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(1)
        }
        let signal = await ShutdownSignal.first(of: [SIGINT, SIGTERM])
        logger.info("shutting down", metadata: ["signal": "\(signal)"])
        await server.shutdown()
    }

    private static func defaultStaticDirectory() -> String? {
        let candidate = "web-client-protocol/client"
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory) && isDirectory.boolValue
            ? candidate : nil
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
