import Synchronization
import TablecastProtocol

/// An optimistic intent the predicted table already shows, waiting for the server's answer.
public struct PendingIntent: Sendable {
    /// Where the answer lands, whether or not anyone waits for it yet.
    final class Box: Sendable {
        private let state = Mutex<
            (
                result: Result<ServerMessage.Ack?, any Error>?,
                waiter: CheckedContinuation<ServerMessage.Ack?, any Error>?
            )
        >((nil, nil))

        func settle(_ result: Result<ServerMessage.Ack?, any Error>) {
            let waiter = state.withLock { state in
                state.result = result
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(with: result)
        }

        func value() async throws -> ServerMessage.Ack? {
            try await withCheckedThrowingContinuation { continuation in
                let result = state.withLock { state in
                    if state.result == nil { state.waiter = continuation }
                    return state.result
                }
                if let result { continuation.resume(with: result) }
            }
        }
    }

    let box: Box

    /// The server's ack once it accepted the intent (`nil`: it changed nothing); throws its refusal.
    public func answer() async throws -> ServerMessage.Ack? { try await box.value() }
}
