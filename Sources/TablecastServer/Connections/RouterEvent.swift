import TablecastProtocol
import WebSocketTransport

/// What the router's task receives: transport events, request tasks' outcomes, and the order to stop taking
/// requests.
enum RouterEvent: Sendable {
    case transport(WebSocketEvent)
    case finished(WebSocketConnectionID, RequestOutcome)
    case stop(CheckedContinuation<Void, Never>)
    /// Time to close the connections whose tokens expired.
    case tick
    /// The access files were reloaded: the new policy, and where to say how many connections it closed.
    case policy(AccessPolicy, CheckedContinuation<Int, Never>)
}

/// A hello, as the router completes it once the client's refs are loaded.
struct Hello: Sendable {
    var client: String
    /// `nil` or empty: the connection is an anonymous watcher in presence.
    var name: String?
    var token: String?
    var ref: String?
    /// What the token lets the client do, once it was checked.
    var credential: Credential?
}

/// What a request task reports back to the router.
enum RequestOutcome: Sendable {
    /// The request was answered.
    case done
    /// The refs of a hello's client, as read from the store (nil: they could not be).
    case hello(Hello, [String: RefUse]?)
    /// A request for a table this node did not hold was looked up in the shared store: the table's actor, now
    /// held, or nil when the store has no such table either.
    case adopted(ClientMessage, Result<TableActor?, any Error>)
}

extension ProtocolError {
    /// The wire form of an access refusal.
    init(_ denial: AccessPolicy.Denial) {
        self.init(denial.code == .unauthorized ? .unauthorized : .forbidden, denial.message)
    }
}
