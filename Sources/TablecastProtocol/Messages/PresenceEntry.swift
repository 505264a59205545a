/// One connection listed in a table's presence: a person who said `hello` with a name, or who sent presence.
public struct PresenceEntry: Hashable, Sendable {
    /// The connection's presence key: unique on the server for as long as it runs, so two tabs of one client
    /// are two entries. Deltas name entries by it.
    public var key: String
    public var client: String
    public var name: String
    /// In editing mode (`setEditing:animated:`).
    public var editing: Bool
    /// The row being swiped or edited, if any.
    public var row: String?
    /// The verified user behind the connection (its token's `sub` or tokens-file `user`), when its token names one:
    /// unlike `name` and `client`, which a client without such a token chooses, it cannot be claimed.
    public var user: String?

    public init(key: String, client: String, name: String, editing: Bool, row: String?, user: String? = nil) {
        self.key = key
        self.client = client
        self.name = name
        self.editing = editing
        self.row = row
        self.user = user
    }
}
