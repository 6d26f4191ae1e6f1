"""What runs on a student's machine or in a student's kernel: ``coursekit start`` (copy the course out
of the package and open it), ``coursekit doctor`` (what this machine has and lacks) and the setup cell
at the top of every lesson and exercise (:mod:`coursekit.course.student.setup`)."""
