import DequeModule
import Synchronization

/// A lock-protected queue with one consumer that is started only when work arrives at an idle queue, so that a
/// busy table costs one task per burst of messages rather than one per message.
final class Inbox<Item: Sendable>: Sendable {
    private struct State {
        var items: Deque<Item> = []
        var consuming = false
    }

    private let state = Mutex(State())

    /// Appends `item`; returns true when the queue was idle, in which case the caller must start the consumer.
    func append(_ item: Item) -> Bool {
        state.withLock { state in
            state.items.append(item)
            defer { state.consuming = true }
            return !state.consuming
        }
    }

    /// Takes everything queued; when nothing is, marks the queue idle and returns nil (the consumer then ends).
    /// A deque, so that the consumer can move the items out of it (`popFirst`) rather than copy each one.
    func takeAll() -> Deque<Item>? {
        state.withLock { state in
            guard !state.items.isEmpty else {
                state.consuming = false
                return nil
            }
            defer { state.items.removeAll(keepingCapacity: true) }
            return state.items
        }
    }
}
