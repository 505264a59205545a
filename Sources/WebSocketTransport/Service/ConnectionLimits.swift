/// Per-connection limits the service thread enforces, shared by the server and client roles.
struct ConnectionLimits: Sendable {
    var maxMessageSize: Int
    var maxQueuedBytes: Int
    var maxQueuedMessages: Int
    /// Inbound messages delivered and not yet consumed at which reading pauses; nil: no inbound flow control.
    var maxUnconsumedMessages: Int? = nil
}
