import TableModel
import TablecastProtocol
import WebSocketTransport

/// What a table actor does, in the order its connections asked.
enum TableWork: Sendable {
    case intent(Requester, ref: String?, base: UInt64?, Intent)
    case subscribe(Requester, ref: String?, since: UInt64?, epoch: String?)
    case refresh(Requester, ref: String?, since: UInt64?, epoch: String?)
    /// Ends the requester's subscription; `reason` says why when the server ends it (its token no longer lets it
    /// read the table).
    case unsubscribe(Requester, ref: String?, reason: String? = nil)
    case presence(Requester, ref: String?, PresenceChange)
    /// The requester's connection shows another name or user from now on (its refreshed token says so).
    case renamed(Requester)
    case setRules(Requester, ref: String?, RulesPatch)
    case disconnected(WebSocketConnectionID)
    /// Drop the table: answer the requester, tell subscribers, refuse what is still queued; `done` says whether
    /// it was dropped.
    case drop(Requester, ref: String?, done: CheckedContinuation<Bool, Never>)
    /// Resumes once everything queued before it is done (shutdown waits on it).
    case barrier(CheckedContinuation<Void, Never>)
    /// A snapshot built off the table's task (see ``TableActor``) is ready: the catch-ups waiting for it go on.
    case snapshotBuilt(version: UInt64, rules: TableRules, WebSocketMessage)
    /// A snapshot that waited for room in the memory budget is tried again.
    case retrySnapshot
    /// The shared snapshot of `version` has been kept long enough (see ``TableCatchUps/snapshotLifetime``).
    case snapshotExpired(version: UInt64)
    /// The committer finished writing the table's group in flight (it posts this, after leaving the outcome with
    /// the actor; nobody else does). It wakes an idle table; a busy one takes the outcome between two intents.
    case committed
    /// Another node changed the table in the shared store: catch up with its log (`.commits`), its rules, or its drop.
    case followStore(StoreChange)
    /// The wait between two presence deltas is over (see ``TableAudience/broadcastWhenDue()``).
    case presenceDue

    /// What another node did to the table, as its notification said.
    enum StoreChange: Sendable {
        /// New versions, up to at least `version` (nil: unknown, e.g. after the listener reconnected).
        case commits(upTo: UInt64?)
        case rules
        case dropped
        /// Some node's presence on the table changed.
        case presence
    }

    /// A presence message.
    enum PresenceChange: Sendable {
        case editing(Bool)
        case beginEditingRow(String)
        case endEditingRow(String)
    }
}
