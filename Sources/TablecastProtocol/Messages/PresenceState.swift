/// A table's whole presence, as a subscriber sees it: sent once in `subscribed` and `refreshed`, then kept in
/// step by applying each `presence` delta (``PresenceDelta/apply(to:)``).
public struct PresenceState: Hashable, Sendable {
    /// The receiving connection's own presence key, so that it can tell itself apart from its other tabs.
    public var you: String
    /// The listed connections, in the order they were listed.
    public var clients: [PresenceEntry]
    /// Subscribed connections that are not listed (anonymous watchers), counted only.
    public var viewers: Int

    public init(you: String, clients: [PresenceEntry] = [], viewers: Int = 0) {
        self.you = you
        self.clients = clients
        self.viewers = viewers
    }

    /// The listed connections other than this one.
    public var others: [PresenceEntry] { clients.filter { $0.key != you } }
}
