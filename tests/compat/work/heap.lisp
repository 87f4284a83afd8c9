;;; heap.lisp - an SBCL program for make compat: its dynamic space (one rwx mapping
;;; of the heap SBCL reserves at start) filled with lists, vectors, strings and a hash
;;; table, collected as it goes; the output depends only on the arithmetic.
(defun build (n seed)
  (let ((l nil))
    (dotimes (i n l)
      (push (make-array 16 :initial-element (mod (+ (* i 7919) seed) 100003)) l))))
(defvar *keep* nil)
(dotimes (r 30)
  (push (build 200000 r) *keep*)
  (when (> (length *keep*) 8) (setf *keep* (subseq *keep* 0 8))))
(let ((h (make-hash-table :test #'equal)) (sum 0))
  (dotimes (i 200000)
    (setf (gethash (format nil "k~d" (+ 1000000 (mod (* i 7919) 200000))) h) (* i i)))
  (loop for k being the hash-keys of h using (hash-value v)
        do (setf sum (mod (+ sum v (length k)) 1000000007)))
  (dolist (l *keep*)
    (dolist (a l) (setf sum (mod (+ sum (aref a 0) (aref a 15)) 1000000007))))
  (format t "entries ~d sum ~d~%" (hash-table-count h) sum))
