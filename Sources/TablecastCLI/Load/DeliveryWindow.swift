import Synchronization
import WebSocketTransport

/// `--window-until delivery`: a raw writer's edit stays in its window until it is acked *and* every subscriber of
/// its table has received its update, as `websocket-bench`'s publisher keeps a message in flight until every
/// subscriber has it. The writers then cannot run ahead of the fan-out, and delivery latency measures the fan-out
/// rather than a backlog of edits acked faster than they reach everyone.
final class DeliveryWindow: Sendable {
    private struct Pending {
        /// The ack and the deliveries still to come.
        var remaining: Int
        var writer: WebSocketConnectionID
    }

    private let pending = Mutex<[String: Pending]>([:])
    /// Subscribers of each table: the deliveries an update of it makes.
    private let recipients: [String: Int]
    private let onRelease = Mutex<(@Sendable (WebSocketConnectionID) -> Void)?>(nil)

    init(recipients: [String: Int]) {
        self.recipients = recipients
    }

    /// Where freed slots are reported: the writer whose edit completed.
    func setReleaseHandler(_ handler: @escaping @Sendable (WebSocketConnectionID) -> Void) {
        onRelease.withLock { $0 = handler }
    }

    /// An edit with `ref` is about to be sent by `writer` on `table`.
    func sent(_ ref: String, table: String, writer: WebSocketConnectionID) {
        pending.withLock { $0[ref] = Pending(remaining: 1 + (recipients[table] ?? 0), writer: writer) }
    }

    /// The ack of `ref`, or a subscriber's delivery of its update, arrived.
    func answered(_ ref: String) {
        let writer: WebSocketConnectionID? = pending.withLock { pending in
            guard var entry = pending[ref] else { return nil }
            entry.remaining -= 1
            guard entry.remaining == 0 else {
                pending[ref] = entry
                return nil
            }
            pending[ref] = nil
            return entry.writer
        }
        if let writer { onRelease.withLock { $0 }?(writer) }
    }

    /// `ref` was refused: no update of it will come.
    func refused(_ ref: String) -> WebSocketConnectionID? {
        pending.withLock { $0.removeValue(forKey: ref)?.writer }
    }
}
