import DequeModule
import Synchronization

/// The refs of committed intents per client, so that a retried intent is recognized without a store lookup per
/// intent: the refs a client had stored before are loaded once when it says hello, and every commit adds its ref.
/// Only refs are held, not acks; a hit fetches the stored ack.
final class RefRegistry: Sendable {
    private struct ClientRefs {
        var refs: Set<String> = []
        var order: Deque<String> = []
        /// Whether the store's refs were loaded. Commits record refs whether or not they were: an entry created
        /// by `record` alone (a commit landing after the client's last connection closed) must not pass for a
        /// loaded one, or a retry of an older ref would be taken for a new intent and fail its whole group.
        var loaded = false

        mutating func add(_ new: some Sequence<String>, limit: Int) {
            for ref in new where refs.insert(ref).inserted { order.append(ref) }
            while order.count > limit, let oldest = order.popFirst() { refs.remove(oldest) }
        }
    }

    /// Most refs remembered per client (the store keeps at least as many).
    let limit: Int
    private let clients = Mutex<[String: ClientRefs]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether refs of `client` are loaded.
    func isLoaded(_ client: String) -> Bool {
        clients.withLock { $0[client]?.loaded ?? false }
    }

    /// Adds the refs `client` has in the store.
    func load(_ client: String, refs stored: Set<String>) {
        clients.withLock { clients in
            // In place (`default:` subscript): copying the entry out and back would copy up to `limit` refs.
            clients[client, default: ClientRefs()].add(stored, limit: limit)
            clients[client]!.loaded = true
        }
    }

    func contains(_ client: String, _ ref: String) -> Bool {
        clients.withLock { $0[client]?.refs.contains(ref) ?? false }
    }

    /// Remembers a committed ref. Called once per committed intent: it must cost O(1), not a copy of the set.
    func record(_ client: String, _ ref: String) {
        clients.withLock { clients in
            clients[client, default: ClientRefs()].add(CollectionOfOne(ref), limit: limit)
        }
    }

    /// Drops what is held for `client` (its last connection closed); the store still has its refs.
    func forget(_ client: String) {
        clients.withLock { _ = $0.removeValue(forKey: client) }
    }
}
