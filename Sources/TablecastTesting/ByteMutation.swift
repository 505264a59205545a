extension [UInt8] {
    /// Fuzzing: changes the bytes at a number of random places drawn from `edits`, each a removal, a replacement or
    /// an insertion of a byte of `alphabet`, drawing from `generator` in a fixed order so that a seed replays it.
    public mutating func mutateRandomly(
        edits: ClosedRange<Int>, alphabet: [UInt8], using generator: inout some RandomNumberGenerator
    ) {
        for _ in 0..<Int.random(in: edits, using: &generator) {
            let index = Int.random(in: 0...count, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0 where index < count: remove(at: index)
            case 1 where index < count: self[index] = alphabet.randomElement(using: &generator)!
            default: insert(alphabet.randomElement(using: &generator)!, at: index)
            }
        }
    }
}
