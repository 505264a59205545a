import ArgumentParser
import Synchronization
import WebSocketTransport

/// Measures the cost of the event model on inbound traffic: many connections send to one server whose events
/// reach counting code either directly from the handler or through an `AsyncStream` consumed by a task.
struct InboundCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbound", abstract: "Inbound messages/s with handler vs AsyncStream event delivery.")

    @Option(help: "Client connections sending.") var connections = 100
    @Option(help: "Messages each connection sends.") var messagesPerConnection = 5000
    @Option(help: "Message size in bytes.") var size = 100
    @Option(help: "Rounds per delivery mode, alternating.") var rounds = 2

    func run() async throws {
        let total = connections * messagesPerConnection
        print("inbound: \(connections) connections × \(messagesPerConnection) messages of \(size) bytes")
        for round in 1...rounds {
            for delivery in MirrorServerCommand.Delivery.allCases {
                let seconds = try await measure(delivery)
                print(
                    String(format: "round %d %-8@ %10.0f messages/s", round, delivery.rawValue, Double(total) / seconds)
                )
            }
        }
    }

    private func measure(_ delivery: MirrorServerCommand.Delivery) async throws -> Double {
        let total = connections * messagesPerConnection
        let received = Atomic<Int>(0)
        let opened = Atomic<Int>(0)
        let configuration = WebSocketServer.Configuration(host: "127.0.0.1", port: 0)
        let server: WebSocketServer
        var consumer: Task<Void, Never>?
        switch delivery {
        case .handler:
            server = try WebSocketServer(configuration: configuration) { event in
                if case .message = event { received.add(1, ordering: .relaxed) }
            }
        case .stream:
            let (events, continuation) = AsyncStream.makeStream(of: WebSocketEvent.self)
            server = try WebSocketServer(configuration: configuration) { continuation.yield($0) }
            consumer = Task {
                for await event in events {
                    if case .message = event { received.add(1, ordering: .relaxed) }
                }
            }
        }
        let client = try WebSocketClient { event in
            if case .opened = event { opened.add(1, ordering: .relaxed) }
        }
        let ids = (0..<connections).map { _ in
            client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
        }
        while opened.load(ordering: .relaxed) < connections { try await Task.sleep(for: .milliseconds(5)) }
        let message = WebSocketMessage(kind: .text, bytes: [UInt8](repeating: UInt8(ascii: "x"), count: size))
        let start = ContinuousClock.now
        for _ in 0..<messagesPerConnection { client.send(message, to: ids) }
        while received.load(ordering: .relaxed) < total { try await Task.sleep(for: .milliseconds(1)) }
        let elapsed = ContinuousClock.now - start
        await client.shutdown()
        await server.shutdown()
        consumer?.cancel()
        return elapsed / .seconds(1)
    }
}
