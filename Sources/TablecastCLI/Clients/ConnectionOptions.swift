import ArgumentParser
import Foundation
import TableModel
import TablecastClient
import TablecastProtocol

/// The options every client subcommand shares. `--url`, `--token` and `--client` default to the environment's
/// `TABLECAST_URL`, `TABLECAST_TOKEN` and `TABLECAST_CLIENT` (a flag given wins).
struct ConnectionOptions: ParsableArguments {
    static let defaultURL = "ws://127.0.0.1:8080/"

    @Option(
        name: .customLong("url"),
        help: """
            The server (default: $TABLECAST_URL, else \(ConnectionOptions.defaultURL)); repeat it (or separate with \
            commas) to name several nodes: the client fails over to the next on disconnect.
            """)
    var urlFlag: [String] = []

    @Option(
        name: .customLong("client"),
        help: "Stable client id (makes retried intents idempotent). Default: $TABLECAST_CLIENT, else a random one.")
    var clientFlag: String?

    @Option(
        name: .customLong("name"),
        help:
            "Name shown to others in presence and history (default: $TABLECAST_NAME; without one, a subscriber is only counted among the viewers)."
    )
    var nameFlag: String?

    @Option(name: .customLong("token"), help: "Token for a server with a tokens file (default: $TABLECAST_TOKEN).")
    var tokenFlag: String?

    @Option(help: "Seconds to wait for the server before giving up (exit 2).")
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds")
        }
    }

    var url: String {
        urlFlag.isEmpty ? Environment.value("TABLECAST_URL") ?? Self.defaultURL : urlFlag.joined(separator: ",")
    }
    var client: String? { clientFlag ?? Environment.value("TABLECAST_CLIENT") }
    var token: String? { tokenFlag ?? Environment.value("TABLECAST_TOKEN") }
    var name: String? { nameFlag ?? Environment.value("TABLECAST_NAME") }

    /// A client on `transport` (its caller shuts it down), or else on a transport of its own that `close()` shuts
    /// down; `defaultName` is its presence name when `--name` is not given.
    @OptionGroup var tls: TLSOptions

    func makeClient(transport: TablecastTransport? = nil, defaultName: String? = nil) throws -> TablecastClient {
        var configuration = TablecastClient.Configuration(
            url: url, clientID: client, name: name ?? defaultName, token: token)
        configuration.tls = tls.clientTLS
        return try TablecastClient(configuration: configuration, transport: transport)
    }

    /// The transport of one command's client, kept apart from the client so that a command that gave up can exit
    /// without shutting it down: a connection still in its handshake would hold the shutdown for its flush timeout.
    func makeTransport() throws -> TablecastTransport {
        try TablecastTransport(
            configuration: .init(
                maxMessageSize: TablecastTransport.defaultMaxMessageSize, maxConnections: 16, tls: tls.clientTLS))
    }

    /// Connects, runs `body`, closes. A refusal prints the error as JSON on stderr and exits 1; a refused connection
    /// (at once), or no answer within the timeout, exits 2 with the reason on stderr (no such host, no answer).
    func withClient<T: Sendable>(_ body: @escaping @Sendable (TablecastClient) async throws -> T) async throws -> T {
        let transport = try makeTransport()
        let client = try makeClient(transport: transport)
        let tlsWatch = exitOnTLSFailure(of: client, url: url)
        defer { tlsWatch.cancel() }
        client.connect()
        let outcome = await within(client) { try await body(client) }
        await client.close()
        if case .failure(let error as Unreachable) = outcome {
            Output.error("tablecast: \(error)")
            throw ExitCode(2)
        }
        await transport.shutdown()
        switch outcome {
        case .success(let value):
            return value
        case .failure(let error as ProtocolError):
            Output.error(ServerMessage.error(error).json.jsonText)
            throw ExitCode(1)
        case .failure(let error):
            Output.error("tablecast: \(error)")
            throw ExitCode(1)
        }
    }

    /// Runs `body`, or fails with ``Unreachable`` once `--timeout` has passed (the client's requests end when
    /// cancelled), or at once when every server refuses the connection. The last part of the time goes to finding
    /// out why, while `body` may still finish.
    func within<T: Sendable>(_ client: TablecastClient, _ body: @escaping @Sendable () async throws -> T) async
        -> Result<T, any Error>
    {
        await Self.within(timeout, diagnosing: client, body)
    }

    /// Runs `body`, or fails with ``Unreachable`` after `seconds` (saying why `client` got no answer), or as soon as
    /// every server refuses the connection: waiting will not change that, where a timeout, a reset or a failed
    /// look-up may pass.
    static func within<T: Sendable>(
        _ seconds: Double, diagnosing client: TablecastClient, _ body: @escaping @Sendable () async throws -> T
    ) async -> Result<T, any Error> {
        await withTaskGroup(of: Result<T, any Error>?.self) { group in
            group.addTask {
                do { return .success(try await body()) } catch { return .failure(error) }
            }
            group.addTask {
                let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
                let diagnosis = min(1, seconds / 5)
                try? await Task.sleep(until: deadline - .milliseconds(Int(diagnosis * 1000)))
                if Task.isCancelled { return nil }
                let problem = await Unreachable.problem(of: client, within: diagnosis)
                try? await Task.sleep(until: deadline)
                if Task.isCancelled { return nil }
                return .failure(Unreachable(seconds: seconds, url: client.configuration.url, problem: problem))
            }
            group.addTask {
                guard let refusal = await Unreachable.refusal(of: client.configuration.url, within: min(2, seconds))
                else {
                    return nil
                }
                return .failure(Unreachable(url: client.configuration.url, refusal: refusal))
            }
            for await result in group {
                guard let result else { continue }
                group.cancelAll()
                return result
            }
            return .failure(CancellationError())
        }
    }

    /// The server cannot be reached (it refused the connection), or gave no answer in time, and why.
    struct Unreachable: Error, CustomStringConvertible {
        let description: String

        init(seconds: Double, url: String, problem: String) {
            let within = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
            description = "no answer from \(url) within \(within)s: \(problem)"
        }

        init(url: String, refusal: String) {
            description = "cannot connect to \(url): \(refusal)"
        }

        /// Why `client` got no answer: what a fresh look-up and TCP connect find, else how its connection stands.
        static func problem(of client: TablecastClient, within seconds: Double) async -> String {
            let state = client.connectionState
            if case .live = state { return "connected, but the request was not answered" }
            let url = client.configuration.url
            if let first = url.split(separator: ",").first,
                let endpoint = try? TablecastClient.parse(String(first)),
                let problem = await ConnectionProbe.problem(host: endpoint.host, port: endpoint.port, within: seconds)
            {
                return problem
            }
            // TCP connects: a server is there, and the reason (a wrong scheme for the port, say) is in the handshake.
            if let problem = client.connectionProblem {
                return "the connection failed: \(await ReconnectReason.text(problem, url: url))"
            }
            return "the server accepted the connection but did not answer the WebSocket handshake"
        }

        /// Every server in `url` (comma-separated) refusing the connection, in words; nil if one did not.
        static func refusal(of url: String, within seconds: Double) async -> String? {
            var refusals: [String] = []
            for part in url.split(separator: ",") {
                guard let endpoint = try? TablecastClient.parse(String(part)),
                    let problem = await ConnectionProbe.problem(
                        host: endpoint.host, port: endpoint.port, within: seconds),
                    problem.hasPrefix(ConnectionProbe.refused)
                else { return nil }
                refusals.append(problem)
            }
            return refusals.isEmpty ? nil : refusals.joined(separator: "; ")
        }
    }
}

/// Line output that is flushed at once (scripts read it live).
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// Parses `1,2` or `[1,2]` as an index path.
struct IndexPathArgument: ExpressibleByArgument, Sendable {
    let path: RowPath

    init?(argument: String) {
        let parts = argument.trimmingCharacters(in: CharacterSet(charactersIn: "[] ")).split(separator: ",")
        guard parts.count == 2, let section = Int(parts[0].trimmingCharacters(in: .whitespaces)),
            let row = Int(parts[1].trimmingCharacters(in: .whitespaces)), section >= 0, row >= 0
        else { return nil }
        path = RowPath(section: section, row: row)
    }
}

/// A row value: JSON when it parses as JSON, otherwise the text as a string (`milk` is `"milk"`). Text that looks
/// like JSON (starts with `{`, `[` or `"`) but does not parse is probably a typo: it is stored as a string all the
/// same, with a warning on stderr.
func jsonArgument(_ text: String) -> JSONValue {
    do {
        return try JSONValue(parsing: text)
    } catch {
        if let first = text.first(where: { !$0.isWhitespace }), "{[\"".contains(first) {
            Output.error("tablecast: warning: the value is not valid JSON (\(error)); it is stored as a string")
        }
        return .string(text)
    }
}
