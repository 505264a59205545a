// The targets' checks, compiled into each of them by scripts/fuzz.py. An -O build leaves `precondition`'s message
// out; `fatalError` prints it, so a failed check says what went wrong beside libFuzzer's stack and input.

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { failure(message()) }
}

func failure(_ message: String) -> Never {
    fatalError(message)
}
