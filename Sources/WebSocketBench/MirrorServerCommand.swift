import ArgumentParser
import Synchronization
import WebSocketTransport

/// Our layer playing libwebsockets' `lws-mirror-protocol`: every message received is sent to every connection
/// (the sender included), so one benchmark client can drive both servers the same way.
struct MirrorServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror-server", abstract: "Run a mirror server on our layer (started by `run`).")

    enum Delivery: String, ExpressibleByArgument, CaseIterable {
        /// Broadcast straight from the event handler on the service thread.
        case handler
        /// Hand each event through an AsyncStream to a task that broadcasts: the alternative event model.
        case stream
    }

    @Option(help: "TCP port on 127.0.0.1.") var port: Int
    @Option(help: "How events reach the code that broadcasts: handler or stream.") var delivery: Delivery = .handler

    func run() async throws {
        let box = Mutex<WebSocketServer?>(nil)
        let configuration = WebSocketServer.Configuration(
            host: "127.0.0.1", port: port, subprotocols: ["lws-mirror-protocol"], maxConnections: 20_000)
        switch delivery {
        case .handler:
            let server = try WebSocketServer(configuration: configuration) { event in
                guard case .message(_, let message) = event else { return }
                box.withLock { $0 }?.broadcast(WebSocketMessage(kind: message.kind, bytes: message.bytes))
            }
            box.withLock { $0 = server }
            await server.waitForever()
        case .stream:
            let (events, continuation) = AsyncStream.makeStream(of: WebSocketEvent.self)
            let server = try WebSocketServer(configuration: configuration) { continuation.yield($0) }
            for await event in events {
                guard case .message(_, let message) = event else { continue }
                server.broadcast(WebSocketMessage(kind: message.kind, bytes: message.bytes))
            }
        }
    }
}

extension WebSocketServer {
    /// The benchmark's server runs until its parent kills it.
    fileprivate func waitForever() async {
        while true { try? await Task.sleep(for: .seconds(3600)) }
    }
}
