"""Lessons: Markdown content with front matter, the catalog and quizzes. Headless."""
