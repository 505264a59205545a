import Foundation
import Logging
import Prometheus
import TableModel
import TablecastClient
import TablecastProtocol
import TablecastServer
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real server on a free port with a temporary database, for end-to-end tests over real sockets.
final class TestServer: @unchecked Sendable {
    let directory: URL
    var server: TableServer?
    private(set) var port: Int
    /// The server's outbound queue bound per connection.
    let maxQueuedBytes: Int
    /// How long the server holds each commit back (`serve --debug-commit-delay-ms`), so that intents overlap.
    let commitDelay: Duration

    var url: String { "ws://127.0.0.1:\(port)/" }
    /// A SQLite file in `directory`, or the PostgreSQL URL given at init.
    let databasePath: String

    /// Who may do what (default: anyone, as on loopback without tokens).
    let policy: AccessPolicy

    /// - Parameter database: a `postgresql://` URL to share with other test servers; default: a SQLite file.
    init(
        maxQueuedBytes: Int = 8 << 20, database: String? = nil, commitDelay: Duration = .zero,
        policy: AccessPolicy = .open
    ) async throws {
        self.maxQueuedBytes = maxQueuedBytes
        self.commitDelay = commitDelay
        self.policy = policy
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tablecast-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        databasePath = database ?? directory.appendingPathComponent("t.db").path
        port = 0
        try await start()
    }

    /// Starts (or restarts) the server on the same port and database.
    func start() async throws {
        var logger = Logger(label: "test-server")
        logger.logLevel = .warning
        let registry = PrometheusCollectorRegistry()
        var configuration = TableServer.Configuration(
            port: port, databasePath: databasePath, synchronous: .normal, policy: policy, intentsPerSecond: 100_000,
            maxQueuedBytes: maxQueuedBytes, metricsFactory: PrometheusMetricsFactory(registry: registry),
            metricsPage: { registry.emitToBuffer() })
        configuration.debugCommitDelay = commitDelay
        let server = try await TableServer.start(configuration, logger: logger)
        port = server.port
        self.server = server
    }

    func stop() async {
        await server?.shutdown()
        server = nil
    }

    func tearDown() async {
        await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A counter from the server's /metrics, e.g. `tablecast_intents_total{outcome="unavailable"}`.
    func metric(_ name: String) async throws -> Double {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1)) ?? .nan
        }
        return 0
    }

    /// A fresh client's view: subscribes on a new connection, returns the snapshot and closes.
    func snapshot(_ table: String) async throws -> Replica {
        let client = try TablecastClient(configuration: .init(url: url))
        client.connect()
        let replica = try await client.subscribe(table)
        await client.close()
        return replica
    }
}

/// Waits until `condition` holds, polling; fails after `timeout`.
func eventually(
    timeout: Duration = .seconds(10), _ message: @autoclosure () -> String = "condition",
    file: StaticString = #filePath, line: UInt = #line, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now > deadline {
            XCTFail("timed out waiting for \(message())", file: file, line: line)
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
