import ArgumentParser
import Foundation
import TableModel
import TablecastClient
import TablecastProtocol

/// The options every client subcommand shares.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The server (ws:// or wss://).")
    var url = "ws://127.0.0.1:8080/"

    @Option(help: "Stable client id (makes retried intents idempotent). Default: a random one.")
    var client: String?

    @Option(help: "Name shown to others in presence.")
    var name: String?

    @Option(help: "Token for a server with a tokens file.")
    var token: String?

    @Option(help: "Seconds to wait for the server before giving up.")
    var timeout: Double = 10

    @OptionGroup var tls: TLSOptions

    func makeClient() throws -> TablecastClient {
        var configuration = TablecastClient.Configuration(url: url, clientID: client, name: name, token: token)
        configuration.tls = tls.clientTLS
        return try TablecastClient(configuration: configuration)
    }

    /// Connects, runs `body`, closes. A refusal prints the error as JSON on stderr and exits 1; no answer within
    /// the timeout exits 2.
    func withClient<T: Sendable>(_ body: @escaping @Sendable (TablecastClient) async throws -> T) async throws -> T {
        let client = try makeClient()
        let tlsWatch = exitOnTLSFailure(of: client, url: url)
        defer { tlsWatch.cancel() }
        client.connect()
        let timeout = self.timeout
        let outcome: Result<T, any Error> = await withTaskGroup(of: Result<T, any Error>?.self) { group in
            group.addTask {
                do { return .success(try await body(client)) } catch { return .failure(error) }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                return nil
            }
            let first = await group.next()!
            group.cancelAll()
            return first ?? .failure(TimedOut(seconds: timeout, state: client.connectionState))
        }
        await client.close()
        switch outcome {
        case .success(let value):
            return value
        case .failure(let error as ProtocolError):
            Output.error(ServerMessage.error(error).json.jsonText)
            throw ExitCode(1)
        case .failure(let error as TimedOut):
            Output.error("tablecast: \(error)")
            throw ExitCode(2)
        case .failure(let error):
            Output.error("tablecast: \(error)")
            throw ExitCode(1)
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        let seconds: Double
        let state: ConnectionState
        var description: String { "no answer from the server within \(seconds)s (connection \(state))" }
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

/// A row value: JSON when it parses as JSON, otherwise the text as a string (`milk` is `"milk"`).
func jsonArgument(_ text: String) -> JSONValue {
    (try? JSONValue(parsing: text)) ?? .string(text)
}
