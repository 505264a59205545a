/// What resolving an intent produced: the canonical batch every replica will apply, the version it will create,
/// and where the intent's insertions and moves actually landed (after rebasing and retargeting).
///
/// Resolving changes nothing; hand the resolution to ``TableEngine/commit(_:)`` once it is persisted.
public struct Resolution: Hashable, Sendable {
    /// The committed batch, with lists sorted by position; empty when the intent changes nothing.
    public var batch: Batch
    /// The table version the intent was resolved against (not the client's base); commit requires the engine to
    /// still be at it.
    public var tableVersion: UInt64
    /// The version the table has once this is committed (`tableVersion + 1`, or `tableVersion` for a no-op).
    public var version: UInt64
    /// The ids the batch assigns, in the order of the intent's entries: each inserted section's id followed by
    /// its rows' ids, then each inserted row's id, then the ids of the rows that section reloads put in.
    public var createdIDs: [String]
    /// Where each of the intent's insertSections entries landed (final section index), in entry order.
    public var insertedSections: [Int]
    /// Where each of the intent's insertRows entries landed (final index path), in entry order.
    public var insertedRows: [RowPath]
    /// Where each of the intent's moveSections entries landed (final section index), in entry order.
    public var movedSections: [Int]
    /// Where each of the intent's moveRows entries landed (final index path), in entry order.
    public var movedRows: [RowPath]
    /// The merge patch behind each of the batch's row reloads that a patch made, by the row's index path before
    /// the batch: a client's replica redoes and undoes it as a patch, not as the value it merged to.
    public var patches: [RowPath: JSONValue] = [:]

    /// Whether the intent changes nothing (e.g. deleting a row someone already deleted): nothing is committed.
    public var isNoop: Bool { batch.isEmpty }
}
