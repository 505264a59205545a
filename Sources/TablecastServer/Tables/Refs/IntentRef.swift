import TableModel
import TableStore
import TablecastProtocol

/// A ref as its owner used it: the retry key of one intent. Hashed once, when it is made: an intent's key is looked
/// up in the group in flight and in the pending one, then stored in the latter, and hashing its three strings each
/// time cost more than the lookups themselves.
struct RefKey: Hashable {
    let owner: RefOwner
    let ref: String
    private let hash: Int

    init(owner: RefOwner, ref: String) {
        self.owner = owner
        self.ref = ref
        var hasher = Hasher()
        hasher.combine(owner)
        hasher.combine(ref)
        hash = hasher.finalize()
    }

    static func == (left: RefKey, right: RefKey) -> Bool {
        left.hash == right.hash && left.owner == right.owner && left.ref == right.ref
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}

/// Ref idempotency: how a retried intent is told from a new one, and from another intent sent with the same ref.
/// Pure decisions; the table looks up the registry and the store as they direct.
enum IntentRef {
    /// Where the answer to an intent's ref is, once no uncommitted intent of the table has it.
    enum Lookup: Equatable {
        /// The ref is new to its owner: the intent is applied.
        case new
        /// The registry does not know the ref for sure: the store's stored ack decides (see ``answer(stored:for:)``).
        case store
    }

    /// The fingerprint of `intent` on `table`, which tells a retry from another intent sent with the same ref:
    /// FNV-1a (64 bits) of the intent's canonical encoding without ref and base (a retry may be rebased).
    static func fingerprint(_ intent: Intent, on table: String) -> IntentFingerprint {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in ClientMessage(.intent(table: table, base: nil, intent)).encoded {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return .hash(hash)
    }

    /// Decides from the registry whether `key` is new. `known`: what the registry has for it; `ownerLoaded`:
    /// whether the owner's stored refs are in the registry (it is complete only then: an intent still queued when
    /// its client's last connection closed is checked against the store); `checkStore`: ask the store whatever the
    /// registry says (a rebase after another node stored a ref). Throws `ref_reused` when the registry knows the
    /// ref for another intent.
    static func lookup(
        _ key: RefKey, _ use: RefUse, known: RefUse?, ownerLoaded: Bool, checkStore: Bool
    ) throws(ProtocolError) -> Lookup {
        if let known, !known.admits(use) { throw reused(key.ref, of: key.owner.client, by: known, for: use) }
        return checkStore || known != nil || !ownerLoaded ? .store : .new
    }

    /// Whether the ack the store holds for `key` answers `use` (a retry: true), or the ref is new (nil: false).
    /// Throws `ref_reused` when it was stored for another intent.
    static func answer(stored: StoredAck?, for key: RefKey, _ use: RefUse) throws(ProtocolError) -> Bool {
        guard let stored else { return false }
        let prior = RefUse(table: stored.table, epoch: stored.epoch, intent: IntentFingerprint(stored: stored.intent))
        guard prior.admits(use) else { throw reused(key.ref, of: key.owner.client, by: prior, for: use) }
        return true
    }

    /// A stored ack with the table's current epoch: the one it was stored with may be older (a copy of the
    /// database gives its tables new epochs) or missing (stored before acks carried it).
    static func ack(_ stored: String, withEpoch epoch: String) -> [UInt8] {
        guard case .object(var members)? = try? JSONValue(parsing: stored) else { return Array(stored.utf8) }
        members["epoch"] = .string(epoch)
        return JSONValue.object(members).jsonBytes
    }

    /// The refusal of a ref already used for another intent.
    static func reused(_ ref: String, of client: String, by use: RefUse, for current: RefUse? = nil) -> ProtocolError {
        let table =
            current.map { use.table == $0.table && use.epoch != $0.epoch } == true
            ? "on an earlier table named '\(use.table)', dropped since" : "on table '\(use.table)'"
        return ProtocolError(
            .refReused,
            "ref '\(ref)' of client '\(client)' was already used for another intent (\(table)); a ref "
                + "names one intent: a retry must repeat it on the same table, and a new intent needs a new ref")
    }
}
