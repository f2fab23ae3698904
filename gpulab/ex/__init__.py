"""`gpulab ex`, the learner's side of the exercises: the verbs, `watch`, and checks run through the
worker (`session.Checker`). The exercises themselves, and the grader that checks them, live in
`gpulab.exercises`, below the runner; this package sits above both."""
