import TableModel

/// What a group of intents took, so that a group another node beat to its versions can be resolved again on top
/// of that node's commits: every intent in order (duplicates and no-ops included) and the engine before the
/// group's first change, where the rebase starts from. Only a shared store's groups record anything: a group on a
/// store of its own never loses its versions, and keeping the engine would cost a copy of the table per group.
struct GroupReplay<Source> {
    /// Whether anything is recorded (shared stores).
    let isRecording: Bool
    private(set) var sources: [Source] = []
    /// The engine before the group's first change; nil while the group changed nothing (or records nothing).
    private(set) var engineBefore: TableEngine?

    init(recording: Bool) {
        isRecording = recording
    }

    /// Whether the group can be resolved again after a conflict: it recorded where it started.
    var canRebase: Bool { engineBefore != nil }

    /// The group took `source` (whatever became of it).
    mutating func took(_ source: @autoclosure () -> Source) {
        if isRecording { sources.append(source()) }
    }

    /// The group is about to change `engine`; the first such engine is where a rebase starts from. An autoclosure,
    /// as `took`'s source: the table's engine is copied out of it only when recording.
    mutating func willChange(_ engine: @autoclosure () -> TableEngine) {
        if isRecording && engineBefore == nil { engineBefore = engine() }
    }

    /// This group followed by `next`, a group resolved on top of it: one replay of both, from this one's start.
    func followed(by next: GroupReplay) -> GroupReplay {
        var merged = self
        merged.sources += next.sources
        if merged.engineBefore == nil { merged.engineBefore = next.engineBefore }
        return merged
    }
}
