import Foundation
import Histogram
import Synchronization
import WebSocketTransport

/// The benchmark client: one publisher and N subscribers on one `WebSocketClient`. The publisher keeps at most
/// `window` messages in flight, a message being in flight until every subscriber has it. Each message carries
/// its sequence number and send time, so subscribers measure delivery latency (same process, same clock).
final class FanOutClient: Sendable {
    struct Parameters {
        var subscribers: Int
        var messages: Int
        var size: Int
        var window: Int
    }

    struct Result {
        var deliveries: Int
        var elapsed: Duration
        var latencyMicroseconds: Histogram<UInt64>
        var unexpectedCloses: Int
        var malformed: Int

        var deliveriesPerSecond: Double {
            Double(deliveries) / (elapsed / .seconds(1))
        }
    }

    private struct State {
        var publisher: WebSocketConnectionID?
        var opened = 0
        var sent = 0
        var completed = 0
        var deliveries = 0
        var perMessage: [Int32]
        var latency = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var unexpectedCloses = 0
        /// Set when the run ends: closes after that are the client's own shutdown.
        var ended = false
        /// Messages that are not one whole published message (the C mirror server relays each receive
        /// callback as a message, so a frame split across its reads arrives as two).
        var malformed = 0
        var openedIDs: Set<WebSocketConnectionID> = []
        /// Connections tried again after failing before they opened.
        var connectRetries = 0
        var request: WebSocketConnectRequest?
        var startedAt: ContinuousClock.Instant?
        var finishedAt: ContinuousClock.Instant?
    }

    private let parameters: Parameters
    private let state: Mutex<State>
    private let client = Mutex<WebSocketClient?>(nil)

    init(_ parameters: Parameters) {
        self.parameters = parameters
        state = Mutex(State(perMessage: [Int32](repeating: 0, count: parameters.messages)))
    }

    /// Connects everyone, calls `starting` once all are open, publishes and waits for every delivery, then calls
    /// `finished` before closing the connections.
    func run(
        port: Int, subprotocol: String, starting: () -> Void = {}, finished: () -> Void = {}
    ) async throws -> Result {
        let client = try WebSocketClient(configuration: .init(maxConnections: parameters.subscribers + 16)) {
            self.handle($0)
        }
        self.client.withLock { $0 = client }
        let request = WebSocketConnectRequest(host: "127.0.0.1", port: port, path: "/", subprotocol: subprotocol)
        state.withLock { $0.request = request }
        let publisher = client.connect(request)
        state.withLock { $0.publisher = publisher }
        for _ in 0..<parameters.subscribers { client.connect(request) }
        try await waitUntil(timeout: .seconds(60), "all connections open") {
            $0.opened == self.parameters.subscribers + 1
        }

        starting()
        let first = state.withLock { state in
            state.startedAt = .now
            return publishable(&state)
        }
        for message in first { client.send(message, to: publisher) }
        try await waitUntil(timeout: .seconds(600), "all messages delivered") {
            $0.completed == self.parameters.messages || $0.unexpectedCloses > 0 || $0.malformed > 0
        }
        state.withLock { $0.ended = true }
        finished()
        await client.shutdown()
        return state.withLock { state in
            Result(
                deliveries: state.deliveries, elapsed: (state.finishedAt ?? .now) - state.startedAt!,
                latencyMicroseconds: state.latency, unexpectedCloses: state.unexpectedCloses,
                malformed: state.malformed)
        }
    }

    /// Called on the client's service thread.
    private func handle(_ event: WebSocketEvent) {
        switch event {
        case .opened(let info):
            state.withLock { state in
                state.opened += 1
                state.openedIDs.insert(info.id)
            }
        case .message(let id, let message):
            let now = DispatchTime.now().uptimeNanoseconds
            let parsed = message.bytes.count == parameters.size ? Self.parse(message.bytes) : nil
            let next: [WebSocketMessage] = state.withLock { state in
                guard id != state.publisher else { return [] }
                guard let (sequence, sentAt) = parsed, sequence < state.perMessage.count else {
                    state.malformed += 1
                    return []
                }
                state.deliveries += 1
                _ = state.latency.record(now > sentAt ? (now - sentAt) / 1000 : 0)
                state.perMessage[sequence] += 1
                guard state.perMessage[sequence] == Int32(parameters.subscribers) else { return [] }
                state.completed += 1
                if state.completed == parameters.messages { state.finishedAt = .now }
                return publishable(&state)
            }
            if !next.isEmpty, let publisher = state.withLock({ $0.publisher }), let client = client.withLock({ $0 }) {
                for message in next { client.send(message, to: publisher) }
            }
        case .closed(let id, _):
            // A connection refused while thousands connect at once (a full accept queue) is tried again.
            let retry = state.withLock { state -> (request: WebSocketConnectRequest, wasPublisher: Bool)? in
                if !state.openedIDs.contains(id), !state.ended, state.connectRetries < parameters.subscribers,
                    let request = state.request
                {
                    state.connectRetries += 1
                    return (request, id == state.publisher)
                }
                if !state.ended { state.unexpectedCloses += 1 }
                return nil
            }
            if let retry, let client = client.withLock({ $0 }) {
                let replacement = client.connect(retry.request)
                if retry.wasPublisher { state.withLock { $0.publisher = replacement } }
            }
        }
    }

    /// The messages the window allows now, marked as sent.
    private func publishable(_ state: inout State) -> [WebSocketMessage] {
        var messages: [WebSocketMessage] = []
        while state.sent < parameters.messages, state.sent - state.completed < parameters.window {
            messages.append(Self.encode(sequence: state.sent, size: parameters.size))
            state.sent += 1
        }
        return messages
    }

    /// "<sequence> <send time in ns> xxx…", padded to `size` bytes: text, as the mirror protocol sends text.
    private static func encode(sequence: Int, size: Int) -> WebSocketMessage {
        var bytes = Array("\(sequence) \(DispatchTime.now().uptimeNanoseconds) ".utf8)
        if bytes.count < size { bytes += [UInt8](repeating: UInt8(ascii: "x"), count: size - bytes.count) }
        return WebSocketMessage(kind: .text, bytes: bytes)
    }

    private static func parse(_ bytes: [UInt8]) -> (sequence: Int, sentAt: UInt64)? {
        var numbers: [UInt64] = [0, 0]
        var index = 0
        for byte in bytes {
            if byte == UInt8(ascii: " ") {
                index += 1
                if index == 2 { return (Int(truncatingIfNeeded: numbers[0]), numbers[1]) }
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                numbers[index] = numbers[index] &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
            } else {
                return nil
            }
        }
        return nil
    }

    private func waitUntil(timeout: Duration, _ what: String, _ condition: @Sendable (State) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !state.withLock({ condition($0) }) {
            guard ContinuousClock.now < deadline else {
                let progress = state.withLock { "opened \($0.opened), sent \($0.sent), completed \($0.completed)" }
                throw BenchError("timed out waiting for \(what): \(progress)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
