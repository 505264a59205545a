import Foundation
import Glibc
import Synchronization

/// Listens on ``StoreNotification/channel`` on a thread that owns its own connection, and hands every
/// notification to `onNotification`, in commit order.
///
/// When the connection is lost it reconnects with backoff (0.1 s doubling to 2 s) and, once listening again,
/// calls `onListening(false)` first so the owner can catch up with whatever it missed meanwhile; `onListening(true)`
/// announces the first start, and `onLost` each loss.
public final class PostgresListener: Sendable {
    public struct Handlers: Sendable {
        public var onNotification: @Sendable (StoreNotification) -> Void
        /// Called once listening, with `true` the first time and `false` after a reconnect.
        public var onListening: @Sendable (_ first: Bool) -> Void
        public var onLost: @Sendable (StoreError) -> Void

        public init(
            onNotification: @escaping @Sendable (StoreNotification) -> Void,
            onListening: @escaping @Sendable (_ first: Bool) -> Void, onLost: @escaping @Sendable (StoreError) -> Void
        ) {
            self.onNotification = onNotification
            self.onListening = onListening
            self.onLost = onLost
        }
    }

    private let stopping = Atomic(false)
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts the thread; it connects to `url` and keeps listening until ``stop()``.
    public init(url: String, handlers: Handlers) {
        let thread = Thread { [self] in run(url, handlers) }
        thread.name = "tablecast-listener"
        thread.start()
    }

    /// Stops listening and closes the connection; returns once the thread has ended.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        stopped.wait()
    }

    private func run(_ url: String, _ handlers: Handlers) {
        defer { stopped.signal() }
        var backoff = 0.1
        var first = true
        while !stopping.load(ordering: .acquiring) {
            do throws(PostgresError) {
                let connection = try PostgresConnection(url: url)
                try connection.execute("LISTEN \(StoreNotification.channel)")
                backoff = 0.1
                handlers.onListening(first)
                first = false
                try listen(connection, handlers)
            } catch {
                handlers.onLost(
                    StoreError(
                        error, while: "listening for other nodes' commits on \(PostgresTableStore.redacted(url))"))
                let until = Date().addingTimeInterval(backoff)
                while !stopping.load(ordering: .acquiring) && Date() < until { usleep(20_000) }
                backoff = min(backoff * 2, 2)
            }
        }
    }

    /// Waits on the socket (waking every 50 ms to notice ``stop()``) until the connection fails or the listener stops.
    private func listen(_ connection: PostgresConnection, _ handlers: Handlers) throws(PostgresError) {
        while !stopping.load(ordering: .acquiring) {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) >= 0 || errno == EINTR else {
                throw PostgresError(sqlState: nil, message: "poll failed: errno \(errno)")
            }
            guard descriptor.revents != 0 else { continue }
            for (_, payload) in try connection.notifications() {
                if let notification = StoreNotification(payload: payload) { handlers.onNotification(notification) }
            }
            guard connection.isConnected else {
                throw PostgresError(sqlState: nil, message: "the connection was closed")
            }
        }
    }
}
