import TableModel
import TablecastProtocol
import WebSocketTransport

extension TablecastClient {
    /// Where to connect and who the client is.
    public struct Configuration: Sendable {
        /// `ws://host[:port][/path]` (the port defaults to 80) or `wss://…` (TLS; 443). Several servers (nodes
        /// sharing one database), separated by commas: the client connects to the first and moves to the next after
        /// each lost connection, resuming its subscriptions there with since/epoch.
        public var url: String
        /// The stable client id (1–64 characters) the server deduplicates retried intents by; keep it across
        /// runs to make retries idempotent across restarts.
        public var clientID: String
        /// The name other people see in presence. Without one the connection is not listed in presence (it counts
        /// among a table's viewers) until it sends presence itself.
        public var name: String?
        /// The token that picks a role, when the server has a tokens file or takes signed tokens.
        public var token: String?
        /// Asked for the token of every hello instead of ``token``, and again a while before a signed token (JWT)
        /// expires (a quarter of its remaining life, at most a minute, before its `exp`), whose answer replaces it on
        /// the open connection (`refreshToken`). A connection the server closes because its token ended (4001)
        /// reconnects and asks again. A provider that throws is reported as a ``Event/refusal(_:)`` (`unauthorized`);
        /// at hello, the connection is then closed and tried again with backoff.
        public var tokenProvider: (@Sendable () async throws -> String)?
        /// Delays between reconnect attempts.
        public var backoff: Backoff
        /// Prefix of the refs this client generates: unique per instance (random by default), so a new process
        /// with the same client id never collides with refs the server remembers from an earlier run.
        public var refPrefix: String
        /// Whether `presence` messages are decoded, applied and delivered as events. A client that does not show
        /// presence (a load generator with thousands of connections) saves the work by skipping them.
        public var observesPresence: Bool
        /// Whether subscribed tables are kept as replicas (default). Off, updates are not decoded or applied: each
        /// is reported as ``Event/updateSeen(table:version:originClient:originRef:)`` from a scan of its top level,
        /// which costs a fraction of decoding, and is reported at once on the transport's thread (the handler must
        /// return quickly); snapshots still arrive. For load generators counting deliveries.
        public var keepsReplicas: Bool
        /// Whether inbound messages are handled right on the transport's thread instead of on the client's queue
        /// (default off). No dispatch, and no thread woken, per message; but that one thread then decodes and
        /// applies every client's updates, and the event handler runs there too for inbound events, possibly at the
        /// same time as on the client's queue for timers (it must be thread-safe and return quickly). For load
        /// generators with thousands of subscribers keeping replicas, where the hop cost more than the rest of the
        /// client's work.
        public var handlesOnTransportThread: Bool
        /// How a `wss://` server's certificate is verified (default: against the system's CA store). Used when
        /// the client makes its own transport; a shared ``TablecastTransport`` has its own.
        public var tls: ClientTLS
        /// The local IP address the client's sockets bind to (e.g. one of 127.0.0.0/8's, so that a load generator's
        /// thousands of connections to one server are not limited by one source address's ports); default: the
        /// system's choice.
        public var localAddress: String?

        /// - Parameters:
        ///   - url: the server, e.g. `ws://127.0.0.1:8080/`, or several, comma-separated.
        ///   - clientID: default: a random id (retries are then idempotent only within this instance's life).
        ///   - name: default: none (a viewer, not listed in presence).
        ///   - token: default: none.
        ///   - backoff: default: 100 ms doubling to 10 s, with jitter.
        public init(
            url: String, clientID: String? = nil, name: String? = nil, token: String? = nil,
            backoff: Backoff = Backoff()
        ) {
            let random = String(UInt64.random(in: 0...UInt64.max), radix: 36)
            self.url = url
            self.clientID = clientID ?? "swift-\(random)"
            self.name = name
            self.token = token
            self.backoff = backoff
            self.refPrefix = String(random.prefix(6)) + "-"
            self.observesPresence = true
            self.keepsReplicas = true
            self.handlesOnTransportThread = false
            self.tls = ClientTLS()
        }
    }

    /// What a client observes besides answers to its requests, in the order it happened.
    public enum Event: Sendable {
        /// The connection state changed.
        case state(ConnectionState)
        /// An update arrived for a subscribed table of a client that keeps no replicas
        /// (``Configuration/keepsReplicas`` off).
        case updateSeen(table: String, version: UInt64, originClient: String?, originRef: String?)
        /// A snapshot replaced a subscribed table's replica.
        case snapshot(Replica)
        /// An update was applied to a subscribed table's replica (`replica` is the result).
        case update(ServerMessage.Update, Replica)
        /// A subscribe's catch-up completed (also after each reconnect): the replica is at `status.version`.
        case subscribed(ServerMessage.TableStatus)
        /// Who is on a table now, and what they are editing: after the state a catch-up brought, and after each
        /// `presence` delta.
        case presence(table: String, presence: PresenceState)
        /// A table's rules changed.
        case rules(table: String, rules: TableRules)
        /// A `wss://` connection attempt failed because the server's certificate did not verify (untrusted CA,
        /// expired, another name); `reason` says which. The client keeps retrying with backoff, as for any lost
        /// connection, since the server's certificate may be replaced; a script may rather give up.
        case tlsFailed(reason: String)
        /// A subscribed table was dropped; its subscription ended.
        case dropped(table: String)
        /// The server ended a subscription: the connection's token no longer lets it read the table (`reason`
        /// says so). Its optimistic intents fail with `forbidden`.
        case subscriptionEnded(table: String, reason: String)
        /// An `error` that answers no pending request (e.g. a refused presence message).
        case refusal(ProtocolError)
        /// The predicted table (confirmed plus this client's pending optimistic intents) changed.
        case predicted(table: String, Table)
        /// An optimistic intent was refused (by the server, or locally when what it named is gone): the predicted
        /// table no longer shows it. `code` and `message` are the server's or the engine's.
        case intentRefused(table: String, intent: Intent, code: String, message: String)
    }

    /// The version an intent's index paths refer to.
    public enum Base: Hashable, Sendable {
        /// The version of the subscribed replica (the table as this client shows it); none when not subscribed.
        case replica
        /// No base: the intent applies to the table's current version as given.
        case current
        /// An explicit version.
        case version(UInt64)
    }
}
