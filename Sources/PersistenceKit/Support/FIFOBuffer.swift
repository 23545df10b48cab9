/// A growable ring buffer: O(1) append and removal at the front. Used for the queue of a
/// context, where `Array.removeFirst` would be O(n) per job.
struct FIFOBuffer<Element> {
    private var storage: [Element?] = Array(repeating: nil, count: 16)
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) & (storage.count - 1)] = element
        count += 1
    }

    /// The element `popFirst()` would return, left in place.
    var first: Element? { count > 0 ? storage[head] : nil }

    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) & (storage.count - 1)
        count -= 1
        return element
    }

    /// Doubles the capacity (always a power of two, so indexes wrap with a mask).
    private mutating func grow() {
        var bigger: [Element?] = Array(repeating: nil, count: storage.count * 2)
        for i in 0..<count { bigger[i] = storage[(head + i) & (storage.count - 1)] }
        storage = bigger
        head = 0
    }
}
