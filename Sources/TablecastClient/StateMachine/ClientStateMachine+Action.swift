import TableModel
import TablecastProtocol
import WebSocketTransport

extension ClientStateMachine {
    /// The machine's name for one socket it asked to open; the shell maps it to the transport's connection.
    struct SocketID: Hashable, Comparable, Sendable, CustomStringConvertible {
        var rawValue: Int

        static func < (lhs: SocketID, rhs: SocketID) -> Bool { lhs.rawValue < rhs.rawValue }
        var description: String { "socket \(rawValue)" }
    }

    /// One awaited request (``Call``), from its registration until it is answered, cancelled or failed.
    struct RequestID: Hashable, Comparable, Sendable, CustomStringConvertible {
        /// Increasing: requests are written again after a reconnect in this order.
        var rawValue: UInt64

        static func < (lhs: RequestID, rhs: RequestID) -> Bool { lhs.rawValue < rhs.rawValue }
        var description: String { "request \(rawValue)" }
    }

    /// One optimistic intent someone waits for (a ``PendingIntent``), until the server settles it.
    struct PendingIntentID: Hashable, Sendable {
        var rawValue: Int
    }

    /// A request, as the public API makes it; the machine fills in what depends on its state.
    enum Call: Sendable {
        /// Starts (or renews) a subscription, resuming from the replica's version and epoch when there is one.
        case subscribe(String)
        /// Asks for what the replica missed, from its version and epoch.
        case refresh(String)
        /// Ends a subscription; its optimistic intents are failed at once.
        case unsubscribe(String)
        /// An edit intent whose base, when ``TablecastClient/Base/replica``, is the replica's version when made.
        case intent(table: String, base: TablecastClient.Base, Intent)
        /// Any other request, sent as it is.
        case plain(ClientMessage.Body)
    }

    /// A change of this client's optimistic state, made against the predicted table.
    enum OptimisticEdit: Sendable {
        case submit(Intent)
        case undo
        case redo
    }

    /// What the shell does with a socket, in the order the machine says.
    enum SocketCommand: Sendable {
        /// Opens `socket` to the endpoint at this index of the configured URLs.
        case open(SocketID, endpoint: Int)
        case send(ClientMessage, on: SocketID)
        case close(SocketID, code: WebSocketCloseCode)
        /// Drops the socket without a close frame.
        case abort(SocketID)
    }

    /// A moment the machine wants to hear about again, with ``ClientStateMachine/timerFired(_:)``. A timer that
    /// no longer matters when it fires (its socket or request is gone) does nothing.
    enum Timer: Hashable, Sendable {
        /// Ends the wait before the next connection attempt after `socket` was lost.
        case reconnect(after: SocketID)
        /// Sends again a request refused as `unavailable` for the `attempt`-th time.
        case retryRequest(RequestID, attempt: Int)
        /// Sends again the in-flight optimistic intent with this ref, refused as `unavailable` `attempt` times.
        case resendIntent(ref: String, attempt: Int)
        /// Asks the token provider for a fresh token a while before the token of `socket`'s connection expires.
        case refreshToken(SocketID)
    }

    /// What a token asked of ``TablecastClient/Configuration/tokenProvider`` is for.
    enum TokenUse: Hashable, Sendable {
        /// The hello of `socket`, which waits for it.
        case hello(SocketID)
        /// A `refreshToken` on `socket`, before the connection's token expires.
        case refresh(SocketID)
    }

    /// What the shell performs after leaving the lock, in order (socket commands go out in the order given).
    enum Action: Sendable {
        case socket(SocketCommand)
        /// Calls ``ClientStateMachine/timerFired(_:)`` with `timer` at `deadline`.
        case schedule(Timer, at: Instant)
        /// Answers an awaited request.
        case resume(RequestID, Result<ServerMessage, any Error>)
        /// Answers an optimistic intent (`nil`: it changed nothing).
        case settle(PendingIntentID, Result<ServerMessage.Ack?, any Error>)
        /// Reports an event to `onEvent` and the ``TablecastClient/events()`` streams.
        case emit(TablecastClient.Event)
        /// Calls the token provider; its answer goes to ``ClientStateMachine/tokenGiven(_:for:now:)``.
        case fetchToken(TokenUse)
    }
}
